"""One pipeline for every document (`.py`, `.ipynb`, stdin): check it, or fix it, into a FileReport.

    document -> prefilter -> engine (diagnostics in program lines) -> `# noqa` -> fix edits when an
    output needs them -> positions and line references rendered for the document -> wire findings

Fix edits (the replacement text JSON and SARIF carry) are computed only when asked for; the text
and flake8 outputs never show them. `# noqa` is applied here, so the flake8 plugin, which asks for
diagnostics without it, leaves suppression to flake8. This is the unit of work a process pool hands
out; it never raises for bad input (the error is in the report).
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .documents import Document, InputError, load
from .findings import Finding, Related
from .lines import render
from .settings import Settings

CHECK, FIX, DIFF = "check", "fix", "diff"


@dataclass
class FileReport:
    path: str
    findings: List[Finding] = field(default_factory=list)
    error: Optional[str] = None
    fixed: int = 0
    diff: Optional[str] = None
    output: Optional[str] = None  # the fixed text, for stdin
    from_stdin: bool = False
    deps: Dict[str, str] = field(default_factory=dict)  # other project files the result read: path -> sha256



def diff_path(path: str) -> str:
    """The path a diff header names, as `git apply` accepts it (it refuses `a/./train.py`): relative to
    the working folder and without `.` or `..` parts when the file is inside it, else absolute without
    its leading slash (`a/tmp/x.py`, applied from the root)."""
    absolute = os.path.abspath(path)
    here = os.getcwd()
    if absolute.startswith(here.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, here).replace(os.sep, "/")
    return absolute.lstrip(os.sep).replace(os.sep, "/")

def project_index(settings: Settings, root: str):
    """This process's index of the project the file belongs to (None when project analysis is off)."""
    if not settings.project:
        return None
    from .project.index import index_for

    roots = ((root,) if root else ()) + tuple(settings.src)
    index = index_for(roots, settings.catalog)
    index.begin()
    return index


def process(path: str, settings: Settings, root: str = "", mode: str = CHECK, unsafe: bool = False,
            raw: Optional[bytes] = None, edits: bool = False) -> FileReport:
    """Everything that happens to one file; `raw` is stdin's bytes (then nothing is written)."""
    document: Optional[Document] = None
    try:
        document = load(path, raw)
        project = project_index(settings, root)
        if mode == CHECK:
            report = FileReport(path, check(document, settings, project, edits=edits))
        else:
            report = fix(document, settings, mode, unsafe, project, write=raw is None, edits=edits)
        report.deps = project.dependencies() if project is not None else {}
    except InputError as exc:
        report = FileReport(path, error=render(str(exc), document.place) if document is not None else str(exc))
    except RecursionError:
        report = FileReport(path, error="file too deeply nested to analyse")
    report.from_stdin = raw is not None
    return report


def check(document: Document, settings: Settings, project=None, edits: bool = False,
          noqa: bool = True, prefilter: bool = True, reparser=None) -> List[Finding]:
    """`reparser` (a `parsing.Reparser`): an editor buffer's, which parses again only what changed."""
    program = document.program
    if program is None:
        return []  # a notebook without Python code cells
    # The prefilter first: most files stop here, and a pool worker that only ever sees such files
    # never pays for importing LibCST (0.11 s per process).
    from .prefilter import project_could_match, settings_could_match

    tree = None
    if reparser is not None and prefilter:
        try:
            tree = reparser.syntax_tree(program)  # the parse reuses it
        except InputError:
            pass  # the engine reports it
    if prefilter and not settings_could_match(program, settings, tree) and not (
        project is not None and project_could_match(program, document.path, settings, project)
    ):
        return []
    from .engine import analyse_source
    from .suppression import unsuppressed

    parsed = analyse_source(program, document.path, settings, prefilter=False, project=project, reparser=reparser)
    diagnostics = unsuppressed(parsed.findings, program) if noqa else parsed.findings
    return [wire(d, document, parsed, edits) for d in diagnostics]


def wire(diagnostic, document: Document, parsed=None, edits: bool = False) -> Finding:
    """A diagnostic as plain data for the document: cells and line references rendered, the fix's
    edit added when asked for (a `.py` file's line range; a notebook's cells have none)."""
    place = document.place
    cell, line = place(diagnostic.line)
    end_cell, end_line = place(diagnostic.end_line)
    fix = diagnostic.fix
    if fix is not None:
        fix = {k: render(v, place) if isinstance(v, str) else v for k, v in fix.items()}
        if edits and fix.get("available") and parsed is not None and cell is None and document.program is not None:
            from .analysis.positions import Positions
            from .fixer.apply import edit_for

            edit = edit_for(parsed.module, document.program, diagnostic.plan, _positions(parsed, Positions))
            if edit is not None:
                fix["edit"] = edit
    related = []
    for r in diagnostic.related:
        r_cell, r_line = place(r.line) if r.path == document.path else (None, r.line)
        related.append(Related(r.path, r_line, r.column, r.role, render(r.message, place), r_cell))
    return Finding(
        document.path, line, diagnostic.column, end_line if end_cell == cell else line, diagnostic.end_column,
        diagnostic.code, diagnostic.name, diagnostic.severity, render(diagnostic.message, place), related, fix,
        cell, render(diagnostic.summary, place),
    )


def _positions(parsed, positions_class):
    cached = parsed.positions
    if cached is None:
        cached = parsed.positions = positions_class(parsed.module)
    return cached


def fix(document: Document, settings: Settings, mode: str, unsafe: bool, project=None, write: bool = True,
        edits: bool = False) -> FileReport:
    """`--fix` (written unless `write` is off: stdin) or `--diff` (shown) for one document."""
    path = document.path
    if document.program is None:
        return FileReport(path, output=document.source.text)
    from .fixer.apply import UnfaithfulText, fix_source

    try:
        result = fix_source(document.program, path, unsafe, settings, project=project)
    except UnfaithfulText as exc:
        return FileReport(path, check(document, settings, project), error=str(exc))  # findings still shown
    if result.source == document.program:
        return FileReport(path, [wire(d, document) for d in result.remaining], fixed=result.applied,
                          output=document.source.text)
    try:
        new_text = document.rebuild(result.source)
    except InputError as exc:
        return FileReport(path, [wire(d, document) for d in result.before], error=str(exc))
    report = FileReport(path, [wire(d, document) for d in result.remaining], fixed=result.applied)
    if mode == DIFF:
        report.diff = "".join(
            difflib.unified_diff(
                document.source.text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                f"a/{diff_path(path)}", f"b/{diff_path(path)}",
            )
        )
    elif not write:
        report.output = new_text
    else:
        from .fixer.writer import write_atomic

        write_atomic(path, new_text, document.source)
    return report


def check_text(text: str, path: str = "<string>", settings: Optional[Settings] = None, edits: bool = False,
               project=None) -> List[Finding]:
    """The findings of a Python program given as text, exactly as the CLI reports them for a file."""
    from .documents.python import PythonDocument, decode

    document = PythonDocument(path, decode(text.encode("utf-8")))
    return check(document, settings or Settings(), project, edits=edits)
