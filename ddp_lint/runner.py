"""Checks or fixes one file end to end; the unit of work a process pool hands out."""
from __future__ import annotations

import difflib
import fnmatch
import os
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional

from .findings import Finding
from .settings import Settings
from .source import InputError, SourceText, decode, read_source

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


def project_index(path: str, settings: Settings, root: str):
    """This process's index of the project the file belongs to (None when project analysis is off)."""
    if not settings.project:
        return None
    from .project.index import index_for

    roots = ((root,) if root else ()) + tuple(settings.src)
    index = index_for(roots, settings.catalog)
    index.begin()
    return index


def settings_for(path: str, settings: Settings, root: str = "") -> Settings:
    """Apply per-file-ignores whose glob matches the path (relative to the config's folder)."""
    if not settings.per_file_ignores:
        return settings
    relative = os.path.relpath(os.path.abspath(path), root or os.getcwd()).replace(os.sep, "/")
    ignored = [
        code
        for pattern, codes in settings.per_file_ignores.items()
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(os.path.basename(path), pattern)
        for code in codes
    ]
    return replace(settings, selection=settings.selection.narrowed(ignored)) if ignored else settings


def process(path: str, settings: Settings, mode: str = CHECK, unsafe: bool = False, raw: Optional[bytes] = None,
            root: str = "") -> FileReport:
    """Everything that happens to one file; never raises for bad input (the error is in the report)."""
    settings = settings_for(path, settings, root)
    try:
        source = decode(raw) if raw is not None else read_source(path)
        if path.endswith(".ipynb"):
            from .notebooks import process_notebook

            return process_notebook(path, source, settings, mode, unsafe, from_stdin=raw is not None,
                                    project=project_index(path, settings, root))
        if mode == CHECK:
            # The prefilter first: most files stop here, and a pool worker that only ever sees such
            # files never pays for importing LibCST (0.11 s per process).
            from .prefilter import project_could_match, settings_could_match

            project = project_index(path, settings, root)
            if not settings_could_match(source.text, settings) and not (
                project is not None and project_could_match(source.text, path, settings, project)
            ):
                return FileReport(path, deps=project.dependencies() if project is not None else {})
            from .engine import analyse_source

            findings = analyse_source(source.text, path, settings, prefilter=False, project=project).findings
            return FileReport(path, findings, deps=project.dependencies() if project is not None else {})
        return _fix(path, source, settings, mode, unsafe, raw is not None, root)
    except InputError as exc:
        return FileReport(path, error=str(exc))
    except RecursionError:
        return FileReport(path, error="file too deeply nested to analyse")


def _fix(path: str, source: SourceText, settings: Settings, mode: str, unsafe: bool, from_stdin: bool,
         root: str = "") -> FileReport:
    from .fixer.apply import fix_source
    from .fixer.writer import write_atomic

    result = fix_source(source.text, path, unsafe, settings, project=project_index(path, settings, root))
    report = FileReport(path, result.remaining, fixed=result.applied)
    if result.source == source.text:
        report.output = source.text
        return report
    if mode == DIFF:
        report.diff = "".join(
            difflib.unified_diff(
                source.text.splitlines(keepends=True), result.source.splitlines(keepends=True), f"a/{path}", f"b/{path}"
            )
        )
    elif from_stdin:
        report.output = result.source
    else:
        write_atomic(path, result.source, source)
    return report


def strip_for_transfer(report: FileReport) -> FileReport:
    """CST nodes stay in the worker: what crosses a process boundary is plain data."""
    for finding in report.findings:
        finding.hit = None
        finding.plan = None
    return report
