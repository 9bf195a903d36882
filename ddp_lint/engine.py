"""Lints one program text: prefilter, parse, analyse, run the selected rules, and return diagnostics.

A diagnostic is plain positions in the program plus the rule's words and a reference for fixing
(the fix plan, or why there is none). What happens next is the pipeline's: `# noqa`, fix edits,
rendering positions for the document, the wire format. Nothing here imports the fixer's rewriting
or any front end."""
from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterator, List, Mapping, Optional, Tuple, Union

import libcst as cst
from libcst.metadata import CodeRange

from . import catalog as cat
from .analysis.module import ModuleAnalysis, analyze_module
from .analysis.positions import Positions
from .analysis.stories import holder_stories
from .analysis.callers import add_callers_placements
from .analysis.replay import placement_signature
from .analysis.names import code_text, found_once
from .analysis.summary import ABSENT_HANDED, MANAGED_HANDED, NONE_HANDED, HandedBuilt, calls_of
from .rules import RULES
from .rules.base import RuleHit, shown_path
from .rules.table import kinds_read
from .settings import Settings
from .findings import SAFE, UNSAFE, Fix, Related, Reported
from .documents.python import decode
from .lines import LineNumber
from .parsing import Reparser, parse, syntax_tree
from .planning.planner import FixPlan, Refusal, plan_fix
from .prefilter import project_could_match, settings_could_match


@dataclass
class Diagnostic(Reported):
    """One finding in program coordinates, with the parse-tree references the fixer needs."""

    explanation: str
    related: List[Related] = field(default_factory=list)
    summary: str = ""
    hit: Optional[RuleHit] = field(default=None, repr=False, compare=False)
    plan: Optional[Union[FixPlan, Refusal]] = field(default=None, repr=False, compare=False)

    @property
    def fix(self) -> Optional[Fix]:
        """The fix as data (no edit: computing one is the pipeline's, when an output needs it)."""
        if self.plan is None:
            return None
        if isinstance(self.plan, Refusal):
            return Fix(False, reason=self.plan.reason)
        return Fix(True, SAFE if self.plan.safe else UNSAFE, self.plan.description,
                   "" if self.plan.safe else self.plan.unsafe_reason)

    @property
    def deferred_to(self) -> List[str]:
        """The modules whose side reports this pair too (see `findings.shown_in_run`), as paths are shown."""
        return [shown_path(path) for path in self.hit.deferred_to] if self.hit is not None else []

    @property
    def deferred_at(self) -> List[Tuple[str, int]]:
        """Where the other module makes the placement of a caller's report of its pair (path as shown,
        line); empty when one of them is not known (the report then cannot be confirmed there)."""
        placements = self.hit.placements if self.hit is not None and self.hit.deferred_to else ()
        if any(p.elsewhere is None for p in placements):
            return []
        return [(shown_path(where), line) for where, line, _ in (p.elsewhere.where() for p in placements)]

    @property
    def message(self) -> str:
        """The explanation with what keeps `--fix` from applying, as the text output shows it."""
        if isinstance(self.plan, Refusal):
            return f"{self.explanation} (no automatic fix: {self.plan.reason})"
        if self.plan is not None and not self.plan.safe:
            return f"{self.explanation} (unsafe fix: {self.plan.unsafe_reason})"
        return self.explanation

    def sort_key(self):
        return (self.path, self.line, self.column, self.code)


@dataclass
class Parsed:
    """A parsed program with its diagnostics; the fixer rewrites the same tree."""

    module: cst.Module
    findings: List[Diagnostic]
    positions: Optional[Mapping[cst.CSTNode, CodeRange]] = None  # of `module`, when already known


def lint_source(
    source: Union[str, bytes], path: str = "<string>", settings: Optional[Settings] = None, prefilter: bool = True,
    project=None,
) -> List[Diagnostic]:
    return analyse_source(source, path, settings, prefilter, project).findings


def _yielded(hits: List[RuleHit]) -> List[RuleHit]:
    """The hits that stay: a rule that yields to another on the same holder (DDP101 to DDP002) stays
    quiet, and the placements it reached join the other's related locations, so that the one report
    names every placement the holder reaches."""
    by_story: Dict[Tuple[int, str], RuleHit] = {}
    for hit in hits:
        if hit.story is not None:
            by_story.setdefault((id(hit.story), hit.code), hit)
    kept = []
    for hit in hits:
        louder = next((by_story[(id(hit.story), code)] for code in RULES[hit.code].superseded_by
                       if hit.story is not None and (id(hit.story), code) in by_story), None)
        if louder is None:
            kept.append(hit)
            continue
        named = {id(ref.node) for ref in louder.related}
        at = sum(1 for ref in louder.related if ref.role == "placement")
        for ref in hit.related:
            if ref.role == "placement" and id(ref.node) not in named:
                louder.related.insert(at, ref)
                named.add(id(ref.node))
                at += 1
    return kept


def analyse_source(
    source: Union[str, bytes], path: str = "<string>", settings: Optional[Settings] = None, prefilter: bool = True,
    project=None, reparser: Optional[Reparser] = None, callers_side: bool = True,
) -> Parsed:
    """`project` (a `ProjectIndex`) follows calls into the checked project's other modules; `reparser`
    (an editor buffer's) parses again only the top-level statements that changed since its last text.
    `callers_side=False` leaves out a class's reports of what its callers in other modules place
    (analysis/callers.py): a front end that sees one file at a time never shows them."""
    settings = settings or Settings()
    text = decode(source).text if isinstance(source, bytes) else source.lstrip("\ufeff")
    if prefilter and not settings_could_match(text, settings):
        if project is None or not project_could_match(text, path, settings, project):
            return Parsed(cst.Module(body=[]), [])
    with _cyclic_gc_paused():
        made = _made_for_a_callee(text, path, settings, project) if reparser is None else None
        if made is not None:
            module, analysis = made
            return Parsed(module, findings_for(module, text, path, settings, project, analysis=analysis,
                                               callers_side=callers_side))
        if reparser is None:
            module, positions = parse(text), None
        else:
            module, positions = reparser.parse(text)
        return Parsed(module, findings_for(module, text, path, settings, project, positions, callers_side=callers_side),
                      positions)


def _made_for_a_callee(text: str, path: str, settings: Settings, project):
    """The parse and analysis of this file that the project index made while a callee in another module
    asked what its callers pass; None when it made none, or when this check's would differ (an
    overwrite flag, another catalog)."""
    if project is None or project.catalog is not settings.catalog or _overwrites(text):
        return None
    made = project.analysis_of(path, text)
    if made is not None:
        syntax_tree(text)  # what Python's own parser refuses is an error here, as `parse` makes it
    return made


def _overwrites(text: str) -> bool:
    return cat.OVERWRITE_FLAG in text and "True" in text


def _dispatched_hit(hit: RuleHit) -> bool:
    """A hit about a holder built, or a placement made, in a base's method that a subclass's scope
    walked again (it calls a method the subclass overrides, or the subclass keeps an optimizer;
    `module._walk_class`): the base's scope, or another subclass's, may report the same statement."""
    if hit.story is None or not hit.story.scope.dispatched:
        return False
    sites = [hit.story.holder.site] + [placement.site for placement in hit.placements[:1]]
    return any(id(site.function) in hit.story.scope.dispatched for site in sites if site.function is not None)


def _once_per_dispatch(hits: List[RuleHit]) -> List[RuleHit]:
    """A base's method walked again for a subclass reports only what the subclass's override adds: the
    same rule at the same statement is the base's own finding, reported in the base's scope."""
    if not any(_dispatched_hit(hit) for hit in hits):
        return hits
    plain = {(hit.code, id(hit.node)) for hit in hits if not _dispatched_hit(hit)}
    kept, seen = [], set()
    for hit in hits:
        key = (hit.code, id(hit.node))
        if _dispatched_hit(hit) and (key in plain or key in seen):
            continue  # the base's own finding, or another subclass's for this statement
        seen.add(key)
        kept.append(hit)
    return kept


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


def findings_for(module: cst.Module, text: str, path: str, settings: Settings, project=None,
                 known_positions: Optional[Mapping[cst.CSTNode, CodeRange]] = None,
                 analysis: Optional[ModuleAnalysis] = None, callers_side: bool = True) -> List[Diagnostic]:

    codes = [code for code in settings.selection.codes() if code in RULES]
    if not codes:
        return []
    overwrite = _overwrites(text)
    if analysis is None:
        analysis = analyze_module(module, settings.catalog, overwrite, project, path, source=text)
    if project is not None and not overwrite and project.catalog is settings.catalog:
        project.remember_calls(path, text, analysis.calls)
    if project is not None and callers_side:
        add_callers_placements(analysis, project, path, lambda caller, code: settings_could_match(code, settings) or (
            project_could_match(code, caller, settings, project)))
    positions: List[Mapping[cst.CSTNode, CodeRange]] = [known_positions] if known_positions is not None else []

    def ensure_positions() -> Mapping[cst.CSTNode, CodeRange]:
        if not positions:  # most files that reach the rules have no finding and need none
            positions.append(Positions(module))
        return positions[0]

    def line_of(node: cst.CSTNode) -> int:
        return LineNumber(ensure_positions()[node].start.line)

    hits: List[RuleHit] = []
    scope_of = {}
    for scope in analysis.scopes:
        stories = list(holder_stories(scope))
        scope_hits = [hit for code in codes for hit in RULES[code].check(scope, stories, line_of)]
        scope_of.update((id(hit), scope) for hit in scope_hits)
        hits.extend(_yielded(scope_hits))
    hits = _once_per_dispatch(hits)
    hits = [hit for hit in hits if not _round_trip_at_every_caller(hit, scope_of[id(hit)], analysis, project, path)]
    if not hits:
        return []
    followed = kinds_read(codes)  # the placements a fix must follow: those a selected rule reads
    findings = []
    seen = set()
    for hit in hits:
        rule = RULES[hit.code]
        where = ensure_positions()[hit.node]
        key = (hit.code, where.start.line, where.start.column, hit.message)
        if key in seen:
            continue
        seen.add(key)
        related = [
            Related(path, ensure_positions()[r.node].start.line, ensure_positions()[r.node].start.column + 1, r.role, r.message)
            for r in hit.related if not r.only_elsewhere
        ]
        for r in hit.related:
            if r.elsewhere is not None:  # the statement inside another module's function that does it
                other, line, column = r.elsewhere.where()
                related.append(Related(shown_path(other), line, column + 1, r.role, r.message))
        related.extend(_callers(hit, analysis, project, path, text, ensure_positions))
        plan = plan_fix(hit.story, module, line_of, followed) if hit.story is not None else None
        message = hit.message
        modules = " and ".join(shown_path(p) for p in hit.deferred_to)
        # the report a run that checks that module makes there has the fix, or says why there is none
        if hit.deferred_to and hit.placements[0].caller_module:
            message += f" (a run that checks {modules} reports this there, at the caller; this run does not check it)"
            plan = Refusal(f"the placement is made by a caller, in {modules}, once the constructor returned; "
                           "build the optimizer after that placement, or place the object before building it")
        elif hit.deferred_to:
            via = hit.placements[0].site.via
            message += (f" (a run that checks {modules} reports this there, once for all the callers of `{via}`;"
                        " this run does not check it)")
            plan = Refusal(f"the placement is made inside `{via}`, in {modules}; place the model before the "
                           f"optimizer is built, or build it inside `{via}` after the placement")
        end = where.end if where.start.line == where.end.line or not isinstance(hit.node, cst.BaseCompoundStatement) else where.start
        findings.append(
            Diagnostic(path, where.start.line, where.start.column + 1, end.line, end.column + 1, rule.code, rule.name,
                       rule.severity, message, related, hit.summary, hit, plan)
        )
    findings.sort(key=Diagnostic.sort_key)
    return findings


def placements_reported(text: str, path: str, settings: Settings, project) -> FrozenSet[Tuple[str, int]]:
    """(absolute path, line) of every statement that makes a placement a check of the module reports
    (`# noqa` applied): the reported line, the related locations, and inside a helper of that module,
    the statement in the helper that makes it (`self._move_model_to_device(...)` reaches `model.to()`).
    A caller's report of that module's pair stands only where these name its placement: that side may
    know what the caller's replay does not (its class re-points the optimizer before every step, every
    other caller had placed the model already, a `# noqa` at the API). See `findings.shown_in_run`."""
    from .suppression import unsuppressed

    parsed = analyse_source(text, path, settings, project=project)
    positions = parsed.positions if parsed.positions is not None else Positions(parsed.module)
    ends = set()
    for finding in unsuppressed(parsed.findings, text):
        ends.add((os.path.abspath(path), finding.line))
        ends.update((os.path.abspath(r.path), r.line) for r in finding.related)
        for placement in finding.hit.placements if finding.hit is not None else ():
            if placement.source is not None and placement.source in positions:
                ends.add((os.path.abspath(path), positions[placement.source].start.line))
    return frozenset(ends)


def _round_trip_at_every_caller(hit: RuleHit, scope, analysis, project, path: str) -> bool:
    """The callee side stays quiet when every call of the function in the tree is harmless: it had
    already placed the model there (the move here is then a no-op), it hands no optimizer (`None`), or
    it forwards its own caller's optimizer and every call of it is harmless in turn (a subclass's
    `super().__init__(model, optimizer)`). A function no caller in the tree calls is an API whose callers
    are elsewhere, and is reported. A move in a class's method other than its constructor asks that
    method's callers (`solver.fit()` after the model handed to `Solver(model, ...)` was moved there): so
    does a move after the wrap (the wrapper's hooks stay when nothing moves)."""
    story = hit.story
    if story is not None:
        # reported at the move (the callee side), or at the holder's own line for each move after it
        at_holder = any(hit.node is n for n in (_statement(story.holder.site), story.holder.site.node))
        placements = [s.placement for s in story.steps if _statement(s.placement.site) is hit.node] or (
            [s.placement for s in story.steps] if at_holder else [])
    elif len(hit.placements) == 2 and hit.placements[0].ddp and hit.placements[1].kind == cat.MOVE:
        placements = [hit.placements[1]]  # a move after the wrap
    else:
        placements = []
    return bool(placements) and all(_harmless_placement(story, placement, scope, analysis, project, path)
                                    for placement in placements)


def _statement(site) -> Optional[cst.CSTNode]:
    return site.chain[-1] if site.chain else None  # a base class's method known from the catalog has none


def _harmless_placement(story, placement, scope, analysis, project, path: str) -> bool:
    method, where = placement.site.function, os.path.abspath(path) if path else ""
    if method is not None and scope.class_name is not None and method.name.value != "__init__":
        name = f"{scope.class_name}.{method.name.value}"
    elif method is not None and scope.class_name is None and scope.name == f"{method.name.value}()" and (
            placement.handle.obj in scope.arrived):
        # a module function's move of a model it was handed (`save_network(model)`, then `network.cuda()`)
        name = method.name.value
    else:
        name = None
    # the method's or function's callers say where that model already is
    if name is not None and _callers_harmless((where, name), None, placement_signature(placement), analysis,
                                              project, 0):
        return True
    return story is not None and story.holder.arrives and _callers_harmless(
        story.holder.arrives_key, story.holder.var, placement_signature(placement), analysis, project, 0,
        frozenset(model.text.split(".")[0] for model in story.holder.models))


def _callers_harmless(key, var: Optional[str], signature, analysis, project, depth: int,
                      paired: FrozenSet[str] = frozenset()) -> bool:
    """Whether every caller makes the callee's placement harmless: it placed the model there first, or
    hands no optimizer of its own, or one that holds nothing of what it hands the `paired` parameters."""
    if "." in key[1] and project is None:
        return False  # a method's callers are found through the tree's code (ProjectIndex.call_facts)
    facts = calls_of(key, analysis.calls, project)
    if not facts:
        return False  # no caller known, or the callers unknown
    for fact in facts:
        passed = fact.handed.get(var) if var else None
        if signature in fact.placed or passed in (NONE_HANDED, MANAGED_HANDED):
            continue
        if isinstance(passed, HandedBuilt) and paired and passed.holds is not None and not passed.holds & paired:
            continue  # `Trainer(actor, opt)` with `opt` on another network: the trainer moves none it holds
        if (isinstance(passed, tuple) and depth < 3
                and _callers_harmless(passed[1], passed[2], signature, analysis, project, depth + 1)):
            continue
        return False
    return True


# Enough callers to find the bug from the report; a base class's API can have dozens.
_CALLERS_NAMED = 8


def _callers(hit: RuleHit, analysis, project, path: str, text: str, positions) -> List[Related]:
    """A report at an API whose optimizer arrives built names the calls that hand it one (one report
    per bug, its callers as related locations): each call of the function or class that passes that
    parameter something other than `None` or a managed object, and had not already placed the model
    where the reported placement puts it (those calls are harmless)."""
    story = hit.story
    if story is None or not story.holder.arrives:
        return []
    key, var = story.holder.arrives_key, story.holder.var
    signatures = {placement_signature(placement) for placement in hit.placements}
    found: List[Tuple[Related, Optional[Related]]] = []
    for fact in calls_of(key, analysis.calls, project) or calls_of(key, analysis.calls, None):
        handed = fact.handed.get(var)
        if fact.site is None or handed in (NONE_HANDED, MANAGED_HANDED, ABSENT_HANDED) or signatures <= fact.placed:
            continue
        where = _call_site(fact.site, path, text, project, positions)
        if where is None or any((r.path, r.line) == where[:2] for r, _ in found):
            continue
        call = Related(*where, "caller", f"`{code_text(fact.site[1].func)}(...)` hands it the optimizer")
        # where that caller builds it: the statement its fix moves after the placement
        built = _call_site((fact.site[0], handed.node), path, text, project, positions) if isinstance(
            handed, HandedBuilt) and handed.node is not None else None
        found.append((call, built and Related(*built, "caller", f"builds it here (`{handed.label}`), before the call "
                                                                f"on line {where[1]}")))
    found.sort(key=lambda pair: (pair[0].path != path, pair[0].path, pair[0].line))
    return [r for call, built in found[:_CALLERS_NAMED] for r in (call, built) if r is not None]


def _call_site(site, path: str, text: str, project, positions) -> Optional[Tuple[str, int, int]]:
    """(path as shown, line, column) of a call: this file's from its positions; another module's
    where the call's text occurs once in that module (its tree is not kept: most calls are never shown;
    a call's text printed alone lacks its block's indentation on its continuation lines, so the
    whitespace between its tokens is matched loosely)."""
    where, call = site
    same = os.path.abspath(where) == os.path.abspath(path)
    if same and call in positions():
        start = positions()[call].start
        return path, start.line, start.column + 1
    other = text if same else (project.text_of(where) if project is not None else None)
    found = found_once(other, call) if other else None
    if found is None:
        return None  # not there, or there more than once: which one is unknown
    return (path if same else shown_path(where)), found[0], found[1] + 1


