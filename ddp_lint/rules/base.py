"""What a rule is, and the phrases every rule's message is made of.

A rule is one module in this package holding one `Rule` subclass: its code, name, severity,
documentation (the module docstring, shown by `ddp-lint rule CODE`) and VALID/INVALID examples,
which the test suite runs. Which placements it reads is its row in `table.py`, never its own code.
"""
from __future__ import annotations

import os

from dataclasses import dataclass, field
from typing import Callable, ClassVar, FrozenSet, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from .. import catalog as cat
from ..analysis.events import ANY_SUBMODULE, Elsewhere, Guard, HolderEvent, PlacementEvent, ScopeEvents, Site
from ..analysis.names import code_text
from ..analysis.stories import HolderStory, Step
from .table import RULE_TABLE, PlacementFacts, reads_placement

LineOf = Callable[[cst.CSTNode], int]


@dataclass
class NodeRef:
    """A related location while it is still a parse-tree node (the engine renders it as a `findings.Related`)."""

    node: cst.CSTNode
    role: str  # "placement", "state", "wrap"
    message: str
    elsewhere: Optional[Elsewhere] = None  # also shown where another module's function does it
    # Made by a caller in another module (analysis/callers.py): shown there only, the node here being
    # the constructor it follows
    only_elsewhere: bool = False


@dataclass
class RuleHit:
    """A finding before it has a path and columns: the node to report and what to say."""

    code: str
    node: cst.CSTNode
    message: str  # the explanation: what goes wrong at run time and what to do
    related: List[NodeRef] = field(default_factory=list)
    story: Optional[HolderStory] = None  # the holder's story, for the fix planner
    summary: str = ""  # the concise first line: what, and where (under ~100 characters)
    # The placements that made it fire: each is one its table row reads (tests/test_rule_table.py).
    placements: Tuple[PlacementEvent, ...] = ()
    # The modules whose function or object reports this pair on its side: a run that checks one of
    # them shows that report instead of this one (engine.py, `findings.shown_in_run`).
    deferred_to: Tuple[str, ...] = ()


class Rule:
    code: ClassVar[str]
    VALID: ClassVar[Sequence[str]] = ()
    INVALID: ClassVar[Sequence[str]] = ()
    # From the rule table (rules/table.py), set when the rule is loaded.
    name: str = ""
    severity: str = ""
    superseded_by: Sequence[str] = ()  # codes that say more about the same holder
    # A rule written by `python -m ddp_lint.dev new-rule` and not finished yet: what is missing. Its
    # INVALID examples are expected not to fire (strict xfail), so the suite says when to delete it.
    draft: ClassVar[str] = ""

    @property
    def reads(self) -> FrozenSet[str]:
        """The kinds its table row reads: a placement of any other kind never makes it fire."""
        return RULE_TABLE[self.code].reads

    def reads_placement(self, placement: PlacementFacts) -> bool:
        return reads_placement(self.reads, placement)

    def check(self, scope: ScopeEvents, stories: Sequence[HolderStory], line_of: LineOf) -> Iterator[RuleHit]:
        raise NotImplementedError


class HolderRule(Rule):
    """A rule about one holder: it fires on the first step its predicate accepts, once per holder.
    `accepts` is offered only the steps whose placement the rule's table row reads, so it tests only
    what is its own (the holder's kind, a copy, a state) and never repeats the kinds."""

    # The concise first line says `<holder> <verb> <placement> (line N)`.
    verb: ClassVar[str] = "built before"

    def accepts(self, story: HolderStory, step: Step) -> bool:
        raise NotImplementedError

    def message(self, story: HolderStory, step: Step, line_of: LineOf) -> str:
        raise NotImplementedError

    def check(self, scope: ScopeEvents, stories: Sequence[HolderStory], line_of: LineOf) -> Iterator[RuleHit]:
        reads = self.reads
        for story in stories:
            steps = [step for step in story.steps if reads_placement(reads, step.placement) and self.accepts(story, step)]
            # An optimizer built here is one statement to report, whatever follows it. One that arrives
            # built is reported at the placement, the first on each path (`if ddp: DDP(m) elif dp: DP(m)`).
            for group in (_by_path(steps) if story.holder.arrives else [steps] if steps else []):
                yield self._hit(story, group, line_of)

    def _hit(self, story: HolderStory, steps: List[Step], line_of: LineOf) -> RuleHit:
        related = [
            NodeRef(step.placement.site.node, "placement", placement_phrase(step.placement), step.placement.elsewhere,
                    bool(step.placement.caller_module))
            for step in steps
        ]
        state = steps[0].state
        if state is not None:
            related.append(NodeRef(state.site.node, "state", f"`.{state.method}()` gives the optimizer state"))
        message = self.message(story, steps[0], line_of)
        summary = (
            f"{short_holder(story.holder)} {self.verb} {short_placement(steps[0].placement)} "
            f"(line {placement_line(steps[0].placement, line_of)})"
        )
        node = story.holder.site.statement
        if not story.holder.arrives and line_of(story.holder.site.node) != line_of(node):
            node = story.holder.site.node  # inside a statement over several lines, the line of the call that builds it
        if story.holder.arrives:
            # handed in built: the bug is the move made here, which every caller's optimizer precedes;
            # inside a statement over several lines, the line of the move itself
            placement = steps[0].placement.site
            node = placement.node if line_of(placement.node) != line_of(placement.statement) else placement.statement
            message += f" (it arrives built: every caller of `{story.holder.arrives}` builds it before this move)"
        # (the engine says where, as paths are shown: see engine.py)
        deferred = tuple(sorted({step.deferred_to for step in steps})) if all(step.deferred_to for step in steps) else ()
        return RuleHit(self.code, node, message, related, story, summary, tuple(step.placement for step in steps),
                       deferred)


def _by_path(steps: List[Step]) -> List[List[Step]]:
    """The steps grouped by the paths they lie on: a step starts a group of its own when no path runs
    it together with the first placement of any group before it (`if ddp: DDP(m) elif dp: DP(m)`).
    Paths are one function's: a placement in another method, or made at the same statement (two arms
    inside one helper it calls), is one more step of the same story."""
    groups: List[List[Step]] = []
    for step in steps:
        site = step.placement.site
        home = next((g for g in groups if g[0].placement.site.function is not site.function
                     or g[0].placement.site.statement is site.statement
                     or not g[0].placement.site.exclusive_with(site)), None)
        if home is None:
            groups.append([step])
        else:
            home.append(step)
    return groups


# ----- phrases ------------------------------------------------------------------------------------
_KIND_NOUNS = {cat.EMA: "parameter average", cat.ZERO: "ZeroRedundancyOptimizer"}


def holder_phrase(holder: HolderEvent) -> str:
    noun = _KIND_NOUNS.get(holder.kind, "optimizer")
    if holder.arrives:
        return f"{noun} `{holder.var}` (a parameter of `{holder.arrives}`)"
    if holder.var:
        return f"{noun} `{holder.var}` ({holder.label})"
    return f"{noun} {holder.label}"


def short_holder(holder: HolderEvent) -> str:
    noun = _KIND_NOUNS.get(holder.kind, "optimizer")
    return f"{noun} {short_code(holder.var)}" if holder.var else f"{noun} {holder.label}"


_SHORT = 48


def short_code(text: str) -> str:
    """Code in a concise line: backticked, long spans cut in the middle of nothing important."""
    text = text.strip("`")
    if len(text) > _SHORT:
        text = text[: _SHORT - 3] + "..."
    return f"`{text}`"


def short_placement(placement: PlacementEvent) -> str:
    if placement.label.startswith("submodule"):  # `submodule reassignment `m.fc = ...``: prose around code
        code = placement.label.partition("`")[2]  # too long: the attribute it rebinds
        return placement.label if len(placement.label) <= _SHORT + 12 else "new " + short_code(code.partition(" = ")[0])
    return short_code(placement_text(placement))


def _handle_text(handle) -> str:
    """The part of the object a placement reaches, as code names it: a callee's `self.net.cuda()`
    replayed on the caller's `model` is `model.net.cuda()` (the handle's text is the caller's name)."""
    sub = ".".join(handle.sub)
    if not sub or ANY_SUBMODULE in handle.sub or handle.text.endswith(f".{sub}") or not handle.text:
        return handle.text
    return f"{handle.text}.{sub}"


def placement_text(placement: PlacementEvent) -> str:
    """The placement as code, without the phrase around it (`model.cuda()`, `DDP(model)`)."""
    label = placement.label
    if label.startswith("."):
        return f"{_handle_text(placement.handle)}{label}"
    if label.startswith("submodule") or label.startswith(f"{placement.handle.text} = "):
        return label  # prose around code, or an assignment that rebinds the name
    if label.endswith(")"):
        return label
    return f"{label}({placement.handle.text})"


def model_names(holder: HolderEvent) -> List[str]:
    """The modules whose parameters it holds, as the code names them; a child named beside its parent
    (`self.encoder` beside `self`, `gan.generator` beside `gan`) is part of it."""
    texts = {m.text for m in holder.models}
    return [text for text in sorted(texts) if not any(text.startswith(f"{other}.") for other in texts)]


def models_phrase(holder: HolderEvent) -> str:
    return ", ".join(f"`{text}`" for text in model_names(holder))


def placement_phrase(placement: PlacementEvent) -> str:
    text = placement_text(placement)
    text = text if placement.label.startswith("submodule") else f"`{text}`"
    if placement.caller_module:
        # made on the object after its constructor returned, by code of another module (analysis/callers.py)
        text += f" (by a caller, in {shown_path(placement.caller_module)})"
    elif placement.site.via and placement.inherited_from:
        # a method its users call after the constructor: its line is the class's
        text += f" (inside `{placement.site.via}`, inherited from `{placement.inherited_from}`)"
    elif placement.site.via:
        text += f" (inside `{placement.site.via}`)"
    return text


def where(placement: PlacementEvent, line_of: LineOf) -> str:
    return f"{placement_phrase(placement)} on line {placement_line(placement, line_of)}"


def placement_line(placement: PlacementEvent, line_of: LineOf) -> int:
    """The line a placement is made on: a caller's in its own module (see `placement_phrase`)."""
    if placement.caller_module and placement.elsewhere is not None:
        return placement.elsewhere.where()[1]
    return line_of(placement.site.node)


def shown_path(path: str) -> str:
    """Another module's path as the checked paths are shown: relative to the working folder when
    inside it (the project index resolves imports to absolute paths)."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if relative.startswith("..") else relative


def condition_phrase(holder_site: Site, step: Step) -> str:
    """The path on which the story holds, in words: the branch only the holder sits in (`on the path
    where `resume is None``), the branch only the placement sits in (`conditionally, under `if
    args.cuda:``), and the ending events that only some paths run (`unless `use_apex``)."""
    placement_site = step.placement.site
    pieces = []
    only_holder = [guard for guard in holder_site.guards if guard not in placement_site.guards]
    if only_holder:
        pieces.append("on the path where " + " and ".join(_guard_text(guard) for guard in only_holder))
    only_placement = [guard for guard in placement_site.guards if guard not in holder_site.guards]
    if only_placement:
        guard = only_placement[-1]
        pieces.append(f"conditionally, under `if {code_text(guard.test)}:`" if guard.holds else f"conditionally, unless `{code_text(guard.test)}`")
    for ending in step.skipped:
        guards = [g for g in ending.site.guards if g not in holder_site.guards and g not in placement_site.guards]
        if guards:
            pieces.append("unless " + " and ".join(_guard_text(guard) for guard in guards))
    # two endings under the same condition (two calls that re-point the optimizer) say it once
    return f" ({'; '.join(dict.fromkeys(pieces))})" if pieces else ""


def _guard_text(guard: Guard) -> str:
    return f"`{code_text(guard.test)}`" if guard.holds else f"not `{code_text(guard.test)}`"


def state_reason(holder: HolderEvent, step: Step, line_of: LineOf) -> str:
    if step.state is not None:
        via = f" (inside `{step.state.site.via}`)" if step.state.site.via else ""
        return f"`{holder.var or 'optimizer'}.{step.state.method}()`{via} on line {line_of(step.state.site.node)} gives it state"
    return f"{holder.label} allocates its state in __init__"


