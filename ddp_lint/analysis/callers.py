"""What the project's callers do with a class's objects once its constructor returned.

`agent = ActorCritic(obs_dim)` whose `__init__` builds `Adam(self.parameters())`, then `agent.to(device)` in
another module: one bug, reported on the caller's side, where both halves are in view (its replay keeps the
holder the constructor built on the new object, then sees the move). A run that checks the class's module
without that caller (a pre-commit hook that sees the changed model file) would say nothing, so the class's
scope takes the callers' placements of the new object (`CallFact.after`, gathered as each caller's walk
went on) as made after its constructor, on the parts of `self` they reach. Its report stands only in a run
that does not check the caller's module, and only where that module's check reports the same placement
(`PlacementEvent.caller_module`, `stories._callee_side`, `findings.shown_in_run`).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Iterator, List, Optional, Tuple

from .events import Elsewhere, Handle, HolderEvent, PlacementEvent, ScopeEvents, Site


def add_callers_placements(analysis, project, path: str, reports) -> None:
    """Each class scope of the module whose constructor builds a holder on the object's own parameters
    gets the placements its callers in other modules make on the objects it builds. `reports(path,
    text)`: whether a check of that caller can report anything (the prefilter's answer): one that cannot
    would never confirm this side's report, so it is not analysed for its calls."""
    where = os.path.abspath(path)
    for scope in analysis.scopes:
        if not scope.class_name or "." in scope.class_name:
            continue  # a nested class is not reached from other modules
        built = _built_on_self(scope)
        if not built:
            continue
        # an analysis made for another check (a caller's, kept by the index) is asked anew, never twice
        scope.events = [e for e in scope.events if not (isinstance(e, PlacementEvent) and e.caller_module)]
        for fact in project.call_facts((where, scope.class_name), reports) or ():
            for event, sub, caller in _placed_after(fact, project, reports, 0):
                if os.path.abspath(caller) != where:
                    _add(scope, built, event, sub, caller, project.locator(caller))


def _placed_after(fact, project, reports, depth: int) -> Iterator[Tuple[PlacementEvent, Tuple[str, ...], str]]:
    """(the placement, the path of the part of the object built by the fact's call it reaches, its
    module) for each placement a caller made on that object after the call; and, where the object is
    kept by the constructor that called (`self._wm = WorldModel(...)` in `Dreamer.__init__`), those the
    callers of that class make on their objects and reach it (`agent = Dreamer(...).to(device)`)."""
    if fact.site is None or fact.after is None:
        return
    for event in fact.after:
        yield event, tuple(event.handle.sub), fact.site[0]
    for key, path in fact.kept_as if depth < 3 else ():
        for outer in project.call_facts(key, reports, own_module=True) or ():
            for event, sub, caller in _placed_after(outer, project, reports, depth + 1):
                if sub[:len(path)] == path:
                    yield event, sub[len(path):], caller
                elif path[:len(sub)] == sub:
                    yield event, (), caller  # the whole of the kept object


def _built_on_self(scope: ScopeEvents) -> List[HolderEvent]:
    """The holders the class's `__init__` builds on the parameters of the object or its parts."""
    return [event for event in scope.events
            if isinstance(event, HolderEvent) and not event.arrives
            and event.site.function is not None and event.site.function.name.value == "__init__"
            and any(_part(model, scope) is not None for model in event.models)]


def _part(handle: Handle, scope: ScopeEvents) -> Optional[Tuple[str, ...]]:
    """The path of the part of the new object a handle is (`()` for the object itself), as the
    constructor's summary reads it (module._part_of_new); None for another object (an argument)."""
    if handle.text == "self" or handle.text.startswith("self."):
        return tuple(handle.text.split(".")[1:])
    if handle.obj in scope.kept_parts:
        return scope.kept_parts[handle.obj] + tuple(handle.sub)
    return None


def _add(scope: ScopeEvents, built: List[HolderEvent], event: PlacementEvent, sub: Tuple[str, ...], caller: str,
         locate) -> None:
    init = built[0].site.function
    # as the constructor's last statement: after everything it did, on every path through it
    site = Site(max(each.site.order for each in scope.events) + 1, init, (init,))
    elsewhere = event.elsewhere or Elsewhere(locate, event.site.node)
    for handle in _reached(event.handle, sub, built, scope):
        scope.events.append(dataclasses.replace(
            event, site=site, handle=handle, caller_module=caller, elsewhere=elsewhere, carriers=(),
            handed_optimizers=(), device_of=frozenset(), device_origins=(), callee_module="", source=None))


def _reached(placed: Handle, placed_path: Tuple[str, ...], built: List[HolderEvent],
             scope: ScopeEvents) -> Iterator[Handle]:
    """The handles of the holders' models a caller's placement reaches, `placed_path` being the part of
    this class's object it places: all of it (`agent.to(device)`), or one part and what lies inside it
    (`agent.net.cuda()`); each shown as the caller names it, and narrowed to the part placed where that
    lies inside a held model."""
    sub = tuple(placed.sub)
    shown = placed.text if not sub or placed.text.endswith("." + ".".join(sub)) else ".".join((placed.text,) + sub)
    seen = set()
    for holder in built:
        for model in holder.models:
            path = _part(model, scope)
            if path is None:
                continue
            if path[:len(placed_path)] == placed_path:
                found = Handle(model.obj, model.sub, shown)  # the placement reaches all of this model
            elif placed_path[:len(path)] == path:
                found = Handle(model.obj, tuple(model.sub) + placed_path[len(path):], shown)  # a part of it
            else:
                continue
            if (found.obj, found.sub) not in seen:
                seen.add((found.obj, found.sub))
                yield found
