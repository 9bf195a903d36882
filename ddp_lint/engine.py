"""Lints one source text: prefilter, parse, analyse, run the selected rules, place and filter findings."""
from __future__ import annotations

import gc
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, List, Optional, Union

import libcst as cst

from . import catalog as cat
from .analysis.module import analyze_module
from .analysis.positions import Positions
from .analysis.stories import holder_stories
from .analysis.walker import placement_signature
from .rules import RULES
from .rules.base import RuleHit
from .settings import Settings
from .findings import Finding, Related
from .source import InputError, decode
from .prefilter import settings_could_match

_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z][A-Z0-9]*(?:[,\s]+[A-Z][A-Z0-9]*)*))?", re.IGNORECASE)


@dataclass
class Parsed:
    """A parsed file with the analysis results the fixer needs alongside the findings."""

    module: cst.Module
    findings: List[Finding]


def lint_source(
    source: Union[str, bytes], path: str = "<string>", settings: Optional[Settings] = None, prefilter: bool = True,
    project=None,
) -> List[Finding]:
    return analyse_source(source, path, settings, prefilter, project).findings


def analyse_source(
    source: Union[str, bytes], path: str = "<string>", settings: Optional[Settings] = None, prefilter: bool = True,
    project=None,
) -> Parsed:
    """`project` (a `ProjectIndex`) follows calls into the checked project's other modules."""
    settings = settings or Settings()
    text = decode(source).text if isinstance(source, bytes) else source.lstrip("\ufeff")
    if prefilter and not settings_could_match(text, settings):
        from .prefilter import project_could_match

        if project is None or not project_could_match(text, path, settings, project):
            return Parsed(cst.Module(body=[]), [])
    with _cyclic_gc_paused():
        module = parse(text)
        return Parsed(module, findings_for(module, text, path, settings, project))


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """A LibCST tree holds no reference cycles, but building one allocates millions of objects, and
    every collection they trigger walks the host process's whole heap: flake8 keeps each file's
    results until the end of a run, and a parse inside such a heap took 2.3x as long (4.96 s against
    2.18 s for PyTorch's 16 candidate files). Cycles made meanwhile are collected once it resumes."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def parse(text: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise InputError(_syntax_message(text, exc)) from None
    except (RecursionError, MemoryError):
        raise InputError("file too deeply nested to parse") from None


def _syntax_message(text: str, error: cst.ParserSyntaxError) -> str:
    """CPython's own wording and position where it has one; LibCST's otherwise."""
    import ast

    try:
        ast.parse(text)
    except SyntaxError as exc:
        return f"syntax error at line {exc.lineno}, column {exc.offset or 1}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError):
        pass
    first = str(error.message).splitlines()[0] if error.message else "invalid syntax"
    return f"syntax error at line {error.raw_line}, column {error.raw_column + 1}: {first}"


def findings_for(module: cst.Module, text: str, path: str, settings: Settings, project=None) -> List[Finding]:
    from .fixer.apply import edit_for  # the fixer imports this module
    from .fixer.planner import Refusal, plan_fix

    codes = [code for code in settings.selection.codes() if code in RULES]
    if not codes:
        return []
    overwrite = cat.OVERWRITE_FLAG in text and "True" in text
    analysis = analyze_module(module, settings.catalog, overwrite, project, path)
    positions: List[Positions] = []

    def ensure_positions() -> Positions:
        if not positions:  # most files that reach the rules have no finding and need none
            positions.append(Positions(module))
        return positions[0]

    def line_of(node: cst.CSTNode) -> int:
        return ensure_positions()[node].start.line

    hits: List[RuleHit] = []
    for scope in analysis.scopes:
        stories = list(holder_stories(scope))
        scope_hits = [hit for code in codes for hit in RULES[code].check(scope, stories, line_of)]
        by_story = {(id(h.story), h.code) for h in scope_hits if h.story is not None}
        hits.extend(
            h for h in scope_hits
            if h.story is None or not any((id(h.story), c) in by_story for c in RULES[h.code].superseded_by)
        )
    hits = [hit for hit in hits if not _round_trip_at_every_caller(hit, analysis, project)]
    if not hits:
        return []
    lines = text.splitlines()
    findings = []
    seen = set()
    for hit in hits:
        rule = RULES[hit.code]
        where = ensure_positions()[hit.node]
        key = (hit.code, where.start.line, where.start.column, hit.message)
        if key in seen:
            continue
        seen.add(key)
        if _suppressed(lines, where.start.line, hit.code):
            continue
        related = [
            Related(path, ensure_positions()[r.node].start.line, ensure_positions()[r.node].start.column + 1, r.role, r.message)
            for r in hit.related
        ]
        for r in hit.related:
            if r.elsewhere is not None:  # the statement inside another module's function that does it
                other, line, column = r.elsewhere
                related.append(Related(_display(other), line, column + 1, r.role, r.message))
        plan, fix, message = None, None, hit.message
        if hit.story is not None:
            plan = plan_fix(hit.story, module, line_of)
            if isinstance(plan, Refusal):
                fix = {"available": False, "reason": plan.reason}
                message = f"{message} (no automatic fix: {plan.reason})"
            else:
                fix = {"available": True, "applicability": "safe" if plan.safe else "unsafe", "message": plan.description,
                       "edit": edit_for(module, text, plan, ensure_positions())}
                if not plan.safe:
                    fix["reason"] = plan.unsafe_reason
                    message = f"{message} (unsafe fix: {plan.unsafe_reason})"
        end = where.end if where.start.line == where.end.line or not isinstance(hit.node, cst.BaseCompoundStatement) else where.start
        findings.append(
            Finding(path, where.start.line, where.start.column + 1, end.line, end.column + 1, rule.code, rule.name,
                    rule.severity, message, related, fix, hit, plan)
        )
    findings.sort(key=Finding.sort_key)
    return findings


def _round_trip_at_every_caller(hit: RuleHit, analysis, project) -> bool:
    """The callee side stays quiet when every call of the function in the tree had already placed the
    model there (the move here is then a no-op); a function no caller in the tree calls is an API
    whose callers are elsewhere, and is reported."""
    story = hit.story
    if story is None or not story.holder.arrives:
        return False
    step = next((s for s in story.steps if s.placement.site.statement is hit.node), None)
    if step is None:
        return False
    key = story.holder.arrives_key
    facts = [placed for callee, placed in analysis.calls if callee == key]
    if project is not None:
        elsewhere = project.call_facts(key)
        if elsewhere is None:
            return False
        facts.extend(placed for _, placed in elsewhere)
    signature = placement_signature(step.placement)
    return bool(facts) and all(signature in placed for placed in facts)


def _display(other: str) -> str:
    """Another module's path as the checked paths are shown: relative to the working folder when
    inside it (the index resolves imports to absolute paths)."""
    import os

    try:
        relative = os.path.relpath(other)
    except ValueError:  # another drive
        return other
    return other if relative.startswith("..") else relative


def _suppressed(lines: List[str], line: int, code: str) -> bool:
    if line - 1 >= len(lines):
        return False
    match = _NOQA.search(lines[line - 1])
    if match is None:
        return False
    codes = match.group("codes")
    if not codes:
        return True
    return any(code.startswith(c.upper()) for c in re.split(r"[,\s]+", codes) if c)
