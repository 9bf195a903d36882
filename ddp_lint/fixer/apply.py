"""Applies fix plans to a source text, pass after pass, and counts only the fixes that landed."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

import libcst as cst

from ..analysis.positions import Positions
from ..documents.python import InputError
from ..findings import Edit
from ..engine import Diagnostic, Parsed, analyse_source, parse
from ..settings import Settings
from ..suppression import unsuppressed
from ..planning.planner import FixPlan

MAX_PASSES = 8


@dataclass
class FixResult:
    source: str
    applied: int  # fixes that landed: findings whose plan was applied, summed over the passes kept
    remaining: List[Diagnostic] = field(default_factory=list)
    before: List[Diagnostic] = field(default_factory=list)
    applied_codes: Dict[str, int] = field(default_factory=dict)  # `applied`, by rule (`--show-fixes`)


class UnfaithfulText(InputError):
    """LibCST drops a form feed at the start of a statement's line, and a whitespace-only line before
    the end of a file can go too: the regenerated file would differ in more than the fix."""

    def __init__(self) -> None:
        super().__init__("not fixed: LibCST does not give this file's text back exactly (a form feed before a "
                         "statement, say), so rewriting it would change more than the fix")


def fixable(findings: Sequence[Diagnostic], unsafe: bool) -> List[Diagnostic]:
    return [f for f in findings if isinstance(f.plan, FixPlan) and (f.plan.safe or unsafe)]


def fix_source(
    source: Union[str, bytes], path: str = "<string>", unsafe: bool = False, settings: Optional[Settings] = None,
    project=None,
) -> FixResult:
    """Fix every fixable finding of `source`; the result parses and no longer has any finding it fixed.

    `applied` counts by identity, not by text: in each pass whose text is kept, every finding whose
    plan was applied counts, and so does every finding on the same holder statement as an applied plan
    (one move fixes them all). A text that changed therefore always reports at least one fix, and a
    statement repeated elsewhere in the file cannot hide one."""
    settings = settings or Settings()
    text = source if isinstance(source, str) else source.decode("utf-8")
    first = _analysed(text, path, settings, project)
    before = first.findings
    current, parsed = text, first
    seen = {text}
    applied: Counter = Counter()
    for _ in range(MAX_PASSES):
        todo = fixable(parsed.findings, unsafe)
        if not todo:
            break
        if current is text and parsed.module.code != text:
            raise UnfaithfulText()
        chosen = _non_conflicting(todo)
        new_text = apply_plans(parsed.module, chosen)
        if new_text in seen:
            break  # no progress, or an oscillation: stop with the last good text (this pass counts nothing)
        parse(new_text)  # raises InputError if the result does not parse: never written
        seen.add(new_text)
        current = new_text
        applied.update(_covered(todo, chosen))
        parsed = _analysed(current, path, settings, project)
    remaining = parsed.findings
    # The loop stops with a fixable finding left only when a pass made no progress (its text was seen
    # before: a fix that leaves its own finding behind, or two that undo each other) or when the passes
    # ran out: some fix did not do what it claimed, so nothing is written. This is decided on the
    # findings themselves, not by matching them to the original ones by statement text: texts repeat
    # (identical statements in other functions, one of them left unfixable, would look "stuck" or hide
    # a stuck one), and a fix moves statements and may rename inside them, so neither text nor
    # position identifies a finding across passes.
    if current != text and fixable(remaining, unsafe):
        current, remaining, applied = text, before, Counter()
    return FixResult(current, sum(applied.values()), remaining, before, applied_codes=dict(sorted(applied.items())))


def _analysed(text: str, path: str, settings: Settings, project) -> Parsed:
    """The diagnostics `# noqa` leaves (unless `--ignore-noqa`): a silenced finding is not fixed either."""
    parsed = analyse_source(text, path, settings, project=project)
    if not settings.ignore_noqa:
        parsed.findings = unsuppressed(parsed.findings, text)
    return parsed


def _covered(findings: Sequence[Diagnostic], chosen: Sequence[FixPlan]) -> List[str]:
    """The findings of one pass that its chosen plans fix: those whose plan was chosen, and those whose
    holder statement a chosen plan moves (`_non_conflicting` keeps one plan per holder); their codes."""
    plans = {id(plan) for plan in chosen}
    holders = {id(plan.holder_statement) for plan in chosen if plan.holder_statement is not None}
    return [
        f.code
        for f in findings
        if id(f.plan) in plans or (f.plan.holder_statement is not None and id(f.plan.holder_statement) in holders)
    ]


def _non_conflicting(findings: Sequence[Diagnostic]) -> List[FixPlan]:
    """One plan per holder, none overlapping another in its block. Where two overlap, the one whose
    holder was written last goes first: each later pass inserts right after the same placement, so the
    moved statements end up in the order they were written in."""
    chosen: List[FixPlan] = []
    spans: Dict[int, List[Tuple[int, int]]] = {}
    seen_holders = set()
    for finding in sorted(findings, key=lambda f: _holder_index(f.plan), reverse=True):
        plan: FixPlan = finding.plan
        if id(plan.holder_statement) in seen_holders:
            continue
        start, end = _holder_index(plan), _index(list(plan.block_owner.body), plan.anchor)
        owned = spans.setdefault(id(plan.block_owner), [])
        if any(not (end < a or start > b) for a, b in owned):
            continue  # overlaps a move already chosen in this block: next pass
        owned.append((start, end))
        seen_holders.add(id(plan.holder_statement))
        chosen.append(plan)
    return chosen


def _index(body, node) -> int:
    return next(i for i, s in enumerate(body) if s is node)


def _holder_index(plan: FixPlan) -> int:
    return min(_index(list(plan.block_owner.body), s) for s in plan.moved)


class _Mover(cst.CSTTransformer):
    def __init__(self, plans: Sequence[FixPlan], positions: Optional[Positions] = None) -> None:
        self.by_owner: Dict[int, List[FixPlan]] = {}
        for plan in plans:
            self.by_owner.setdefault(id(plan.block_owner), []).append(plan)
        self.positions = positions
        self.targets = [positions[plan.block_owner] for plan in plans] if positions is not None else []

    def on_visit(self, node: cst.CSTNode) -> bool:
        """With positions, descend only into nodes whose range holds a block that changes: one fix in
        a large file then costs a walk down to its block, not a rebuild of the whole tree."""
        if self.positions is None or isinstance(node, cst.Module):
            return True
        where = self.positions.get(node)
        return where is not None and any(
            (where.start.line, where.start.column) <= (t.start.line, t.start.column)
            and (where.end.line, where.end.column) >= (t.end.line, t.end.column)
            for t in self.targets
        )

    def _rebuild(self, original, updated):
        plans = self.by_owner.get(id(original))
        if not plans:
            return updated
        original_body = list(original.body)
        statements = list(updated.body)
        order = list(range(len(original_body)))
        for plan in plans:
            moved = [_index(original_body, s) for s in plan.moved]
            if plan.retarget is not None:
                statements[moved[0]] = statements[moved[0]].visit(_Rename(*plan.retarget))
            order = [i for i in order if i not in moved]
            position = order.index(_index(original_body, plan.anchor)) + 1
            order[position:position] = moved
        return updated.with_changes(body=[statements[i] for i in order])

    def leave_Module(self, original, updated):
        return self._rebuild(original, updated)

    def leave_IndentedBlock(self, original, updated):
        return self._rebuild(original, updated)


class _Rename(cst.CSTTransformer):
    """Points `model.parameters()` at the wrapper's name; keyword names and attributes are left alone."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.new) if original.value == self.old else updated


def apply_plans(module: cst.Module, plans: Sequence[FixPlan], positions: Optional[Positions] = None) -> str:
    """The module's code with the plans applied; `positions` (of this module) makes it cheaper."""
    return module.visit(_Mover(plans, positions)).code


def changed_span(old: Sequence[str], new: Sequence[str]) -> Tuple[int, int, int]:
    """Where two line lists differ: `old[start:end_old]` became `new[start:end_new]` (the common first
    and last lines left out, so an edit replaces only what a fix moved)."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return start, end_old, end_new


def edit_for(module: cst.Module, text: str, plan: FixPlan, positions: Positions) -> Optional[Edit]:
    """One fix as a replacement of the line range it changes (for JSON and SARIF consumers); None
    where LibCST does not give the file's text back (the edit would change more than the fix)."""
    old = text.splitlines(keepends=True)
    new = _block_rebuilt(module, old, plan, positions)
    if new is None:
        if module.code != text:
            return None
        new = apply_plans(module, [plan], positions).splitlines(keepends=True)
    start, end_old, end_new = changed_span(old, new)
    last = old[end_old - 1] if end_old > start else ""
    return Edit(start + 1, end_old, len(last.rstrip("\r\n")) + 1, "".join(new[start:end_new]))


def _block_rebuilt(module: cst.Module, old: List[str], plan: FixPlan, positions: Positions) -> Optional[List[str]]:
    """The file's lines with the plan applied, generating code for the changed block alone rather
    than the whole module (every finding has its own edit: 125 ms each in a 2,900-line file when each
    regenerated the module). Given its absolute indentation, the block's code after its header is the
    file's own lines, ending with the last line of its body; where that does not hold exactly, None
    (the caller then regenerates the whole module)."""
    owner = plan.block_owner
    if not isinstance(owner, cst.IndentedBlock) or not owner.body:
        return None
    try:
        first_token = positions[owner.body[0]].start.line - 1  # 0-based index in `old`
        first = old[first_token]
    except (KeyError, IndexError):
        return None
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    if not indent:
        return None
    before = module.code_for_node(owner.with_changes(indent=indent)).splitlines(keepends=True)[1:]
    # The body's first statement may have comment, blank or decorator lines above its first token:
    # the first offset that lines up is the only one, since those lines cannot equal a line of code.
    start = next(
        (at for at in range(first_token, max(first_token - len(before), -1), -1) if old[at : at + len(before)] == before),
        None,
    )
    if start is None:
        return None
    rebuilt = owner.visit(_Mover([plan], positions))
    after = module.code_for_node(rebuilt.with_changes(indent=indent)).splitlines(keepends=True)[1:]
    return old[:start] + after + old[start + len(before) :]
