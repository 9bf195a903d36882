"""One pipeline for every document (`.py`, `.ipynb`, stdin): check it, or fix it, into a FileReport.

    document -> prefilter -> engine (diagnostics in program lines) -> `# noqa` -> fix edits when an
    output needs them -> positions and line references rendered for the document -> wire findings

`--add-noqa` (`Mode.ADD_NOQA`) stops after `# noqa`: the findings left get their comments
(`noqa_edits`), written into the file (a notebook's cells) as `--fix` writes.

Fix edits (the replacement text JSON and SARIF carry) are computed only when asked for; the text
and flake8 outputs never show them. `# noqa` is applied here, so the flake8 plugin, which asks for
diagnostics without it, leaves suppression to flake8. This is the unit of work a process pool hands
out; it never raises for bad input (the error is in the report).
"""
from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional

from .documents import Document, InputError, load
from .findings import Finding, Mode, Related, shown_in_run
from .lines import render
from .paths import diff_path
from .settings import Settings

@dataclass
class FileReport:
    path: str
    findings: List[Finding] = field(default_factory=list)
    error: Optional[str] = None
    fixed: int = 0
    fixed_codes: Dict[str, int] = field(default_factory=dict)  # `fixed` by rule
    noqa_added: int = 0  # `--add-noqa`: the comments added or extended (one per line)
    diff: Optional[str] = None
    output: Optional[str] = None  # the fixed text, for stdin
    from_stdin: bool = False
    deps: Dict[str, str] = field(default_factory=dict)  # other project files the result read: path -> sha256


def project_index(settings: Settings, root: str):
    """This process's index of the project the file belongs to (None when project analysis is off)."""
    if not settings.project:
        return None
    from .project.index import index_for

    roots = ((root,) if root else ()) + tuple(settings.src)
    index = index_for(roots, settings.catalog)
    index.begin()
    return index


def process(path: str, settings: Settings, root: str = "", mode: Mode = Mode.CHECK, unsafe: bool = False,
            raw: Optional[bytes] = None, edits: bool = False, run: Optional[FrozenSet[str]] = None) -> FileReport:
    """Everything that happens to one file; `raw` is stdin's bytes (then nothing is written). The
    report keeps a caller's reports of pairs another module's function reports too (the run knows
    which modules it checks, see `findings.shown_in_run`); `--add-noqa` writes comments for those only
    when the run (`run`: its files, absolute; None when unknown) does not check that module."""
    document: Optional[Document] = None
    try:
        document = load(path, raw)
        project = project_index(settings, root)
        if mode == Mode.CHECK:
            report = FileReport(path, check(document, settings, project, edits=edits, deferred=True))
        elif mode == Mode.ADD_NOQA:
            report = add_noqa(document, settings, project, write=raw is None, run=run)
        else:
            report = fix(document, settings, mode, unsafe, project, write=raw is None, edits=edits, deferred=True)
        if project is not None:
            report.deps = project.dependencies()
            project.settle()
    except InputError as exc:
        report = FileReport(path, error=render(str(exc), document.place) if document is not None else str(exc))
    except RecursionError:
        report = FileReport(path, error="file too deeply nested to analyse")
    report.from_stdin = raw is not None
    return report


def check(document: Document, settings: Settings, project=None, edits: bool = False,
          noqa: bool = True, prefilter: bool = True, reparser=None, deferred: bool = False) -> List[Finding]:
    """`reparser` (a `parsing.Reparser`): an editor buffer's, which parses again only what changed.
    `deferred`: keep a caller's reports of pairs the called function's side reports (a run that knows
    its files decides, `findings.shown_in_run`); without it the function's side is the one report."""
    parsed, diagnostics = _diagnostics(document, settings, project, noqa, prefilter, reparser, deferred)
    findings = [wire(d, document, parsed, edits) for d in diagnostics]
    return findings if deferred else shown_in_run(findings, None)


def _diagnostics(document: Document, settings: Settings, project=None, noqa: bool = True, prefilter: bool = True,
                 reparser=None, deferred: bool = True):
    """(the parse, the diagnostics in program lines) of a document; (None, []) when nothing can be found.
    `deferred`: a class's reports of what its callers in other modules place are made (see `check`)."""
    program = document.program
    if program is None:
        return None, []  # a notebook without Python code cells
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
        return None, []
    from .engine import analyse_source
    from .suppression import unsuppressed

    parsed = analyse_source(program, document.path, settings, prefilter=False, project=project, reparser=reparser,
                            callers_side=deferred)
    noqa = noqa and not settings.ignore_noqa
    return parsed, (unsuppressed(parsed.findings, program) if noqa else parsed.findings)


def add_noqa(document: Document, settings: Settings, project=None, write: bool = True,
             run: Optional[FrozenSet[str]] = None) -> FileReport:
    """`--add-noqa` for one document: a `# noqa: CODE` for every finding no comment silences yet (of
    the findings the run shows: `run`, its files, or None when they are unknown; another module's
    reports that confirm a caller's are asked with this file's settings, where the CLI resolves that
    module's own). The findings it could not silence (on a notebook's IPython line) stay in the report."""
    from .noqa_edits import apply, insertions
    from .suppression import unsuppressed

    _, diagnostics = _diagnostics(document, settings, project, deferred=run is not None)
    diagnostics = shown_in_run(diagnostics, set(run) if run is not None else None,
                               lambda module: placements_reported_in(module, settings, project))
    program = document.program
    if not diagnostics or program is None:
        return FileReport(document.path)
    edits = insertions(program, [(d.line, d.code) for d in diagnostics], document.writable)
    if not edits:
        return FileReport(document.path, [wire(d, document) for d in diagnostics])
    new_program = apply(program, edits)
    left = unsuppressed(diagnostics, new_program)  # read back as a check will read it: none, unless a bug
    new_text = document.rebuild(new_program)
    if write:
        from .fixer.writer import write_atomic

        write_atomic(document.path, new_text, document.source)
    return FileReport(document.path, [wire(d, document) for d in left], noqa_added=len(edits), output=new_text)


def wire(diagnostic, document: Document, parsed=None, edits: bool = False) -> Finding:
    """A diagnostic as plain data for the document: cells and line references rendered, the fix's
    edit added when asked for (a `.py` file's line range; a notebook's cells have none)."""
    place = document.place
    cell, line = place(diagnostic.line)
    end_cell, end_line = place(diagnostic.end_line)
    fix = diagnostic.fix
    if fix is not None:
        fix = dataclasses.replace(fix, message=render(fix.message, place), reason=render(fix.reason, place))
        if edits and fix.available and parsed is not None and cell is None and document.program is not None:
            from .analysis.positions import Positions
            from .fixer.apply import edit_for

            edit = edit_for(parsed.module, document.program, diagnostic.plan, _positions(parsed, Positions))
            if edit is not None:
                fix = dataclasses.replace(fix, edit=edit)
    related = []
    for r in diagnostic.related:
        r_cell, r_line = place(r.line) if r.path == document.path else (None, r.line)
        related.append(Related(r.path, r_line, r.column, r.role, render(r.message, place), r_cell))
    return Finding(
        document.path, line, diagnostic.column, end_line if end_cell == cell else line, diagnostic.end_column,
        diagnostic.code, diagnostic.name, diagnostic.severity, render(diagnostic.message, place), related, fix,
        cell, render(diagnostic.summary, place), diagnostic.deferred_to, diagnostic.deferred_at,
    )


def _positions(parsed, positions_class):
    cached = parsed.positions
    if cached is None:
        cached = parsed.positions = positions_class(parsed.module)
    return cached


def fix(document: Document, settings: Settings, mode: str, unsafe: bool, project=None, write: bool = True,
        edits: bool = False, deferred: bool = False) -> FileReport:
    """`--fix` (written unless `write` is off: stdin) or `--diff` (shown) for one document; the
    findings left as `check` gives them (`deferred`)."""
    report = _fix(document, settings, mode, unsafe, project, write, edits)
    if not deferred:
        report.findings = shown_in_run(report.findings, None)
    return report


def _fix(document: Document, settings: Settings, mode: str, unsafe: bool, project, write: bool,
         edits: bool) -> FileReport:
    path = document.path
    if document.program is None:
        return FileReport(path, output=document.source.text)
    from .fixer.apply import UnfaithfulText, fix_source

    try:
        result = fix_source(document.program, path, unsafe, settings, project=project)
    except UnfaithfulText as exc:
        return FileReport(path, check(document, settings, project, deferred=True), error=str(exc))  # still shown
    if result.source == document.program:
        return FileReport(path, [wire(d, document) for d in result.remaining], fixed=result.applied,
                          fixed_codes=result.applied_codes, output=document.source.text)
    try:
        new_text = document.rebuild(result.source)
    except InputError as exc:
        return FileReport(path, [wire(d, document) for d in result.before], error=str(exc))
    report = FileReport(path, [wire(d, document) for d in result.remaining], fixed=result.applied,
                        fixed_codes=result.applied_codes)
    if mode == Mode.DIFF:
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


def placements_reported_in(module: str, settings: Settings, project) -> FrozenSet:
    """The placements a check of another module reports (engine.placements_reported), once per process
    and index; empty when it cannot be read or is being checked already (a cycle of callers)."""
    if project is None:
        return frozenset()
    from .engine import placements_reported

    return project.findings_of(module, settings, placements_reported) or frozenset()


def check_text(text: str, path: str = "<string>", settings: Optional[Settings] = None, edits: bool = False,
               project=None) -> List[Finding]:
    """The findings of a Python program given as text, exactly as the CLI reports them for a file."""
    from .documents.python import PythonDocument, decode

    document = PythonDocument(path, decode(text.encode("utf-8")))
    return check(document, settings or Settings(), project, edits=edits)
