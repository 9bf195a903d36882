"""What happens to each holder's model after the holder is built: the facts every rule reads."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, List, Optional

import libcst as cst

from .. import catalog as cat
from .events import (
    DiscardedWrapperEvent,
    ForwardEvent,
    HolderEvent,
    Site,
    ManagedEvent,
    PlacementEvent,
    RebindEvent,
    ScopeEvents,
    StateEvent,
)


@dataclass
class Step:
    """One placement that reaches the holder's model after the holder was built."""

    placement: PlacementEvent
    state: Optional[StateEvent]  # first load_state_dict/step on the holder before this placement
    stepped: Optional[StateEvent]  # first step() before this placement


@dataclass
class HolderStory:
    holder: HolderEvent
    scope: ScopeEvents
    steps: List[Step] = field(default_factory=list)


@dataclass
class ConversionAfterWrap:
    wrap: PlacementEvent
    conversion: PlacementEvent
    scope: ScopeEvents


def holder_stories(scope: ScopeEvents) -> Iterator[HolderStory]:
    events = scope.events
    for index, holder in enumerate(events):
        if not isinstance(holder, HolderEvent):
            continue
        story = _story(scope, index, holder)
        if story is not None:
            yield story


def _story(scope: ScopeEvents, index: int, holder: HolderEvent) -> Optional[HolderStory]:
    events = scope.events
    overlaps = lambda handle: any(handle.overlaps(model) for model in holder.models)  # noqa: E731
    earlier = [event for event in events[:index] if isinstance(event, PlacementEvent) and overlaps(event.handle)]
    placed_before = {event.kind for event in earlier if event.kind in (cat.MOVE, cat.CAST)}
    dtensor = any(event.operation in cat.DTENSOR_PLACEMENTS for event in earlier)
    story = HolderStory(holder, scope)
    states: List[StateEvent] = []
    for event in events[index + 1 :]:
        if isinstance(event, StateEvent) and event.holder is holder:
            states.append(event)
        elif isinstance(event, ManagedEvent) and holder in event.holders:
            break  # handed to a framework that remaps it
        elif isinstance(event, RebindEvent) and event.old is holder:
            if story.steps:
                return None  # rebuilt after the placement: the early holder is superseded
            break
        elif isinstance(event, PlacementEvent) and overlaps(event.handle):
            if event.site.exclusive_with(holder.site):
                continue
            if event.kind in placed_before:
                continue  # the model was already there; this is a round trip, not the first move
            if dtensor and event.operation in cat.SWAPPED_AFTER_DTENSOR:
                continue
            # A class's methods do not run in source order: only state given in the holder's own
            # function, or earlier in the placement's function, is known to come first.
            known = [s for s in states if _root(s.site) in (_root(holder.site), _root(event.site))]
            state = known[0] if known else None
            stepped = next((s for s in known if s.method == "step"), None)
            story.steps.append(Step(event, state, stepped))
    return story


def _runs_after(first: Site, second: Site) -> bool:
    """Source order is execution order within one function; across a class's methods only `__init__`
    is known to run first. An event replayed from a helper (`self.setup()`) is ordered at its call."""
    a, b = _root(first), _root(second)
    if a is b:
        return True
    return a is not None and a.name.value == "__init__"


def _root(site):
    first = site.chain[0] if site.chain else None
    return first if isinstance(first, cst.FunctionDef) else None


def conversions_after_wrap(scope: ScopeEvents) -> Iterator[ConversionAfterWrap]:
    events = scope.events
    for index, wrap in enumerate(events):
        if not (isinstance(wrap, PlacementEvent) and wrap.ddp):
            continue  # FSDP1 handles a later `_apply` (its DEVICE_AFTER init mode); DDP does not
        moved_before = any(
            isinstance(event, PlacementEvent) and event.kind == cat.MOVE and event.handle.overlaps(wrap.handle)
            for event in events[:index]
        )
        for event in events[index + 1 :]:
            if not (isinstance(event, PlacementEvent) and event.kind in (cat.MOVE, cat.CAST)):
                continue
            if not event.handle.overlaps(wrap.handle) or event.site.exclusive_with(wrap.site):
                continue
            if not _runs_after(wrap.site, event.site):
                continue
            if event.operation == "float":
                continue  # parameters are float32 already unless cast before; a no-op keeps DDP's hooks
            if event.kind == cat.MOVE and moved_before:
                continue  # already on its device before wrapping: moving "again" is a no-op
            yield ConversionAfterWrap(wrap, event, scope)


def discarded_wrappers(scope: ScopeEvents) -> Iterator[DiscardedWrapperEvent]:
    """Bare wrapper calls after which the bare module is still called: it trains without the wrapper."""
    events = scope.events
    for index, event in enumerate(events):
        if not isinstance(event, DiscardedWrapperEvent) or event.handle is None:
            continue
        if any(
            isinstance(later, ForwardEvent) and later.handle.overlaps(event.handle) and not later.site.exclusive_with(event.site)
            for later in events[index + 1 :]
        ):
            yield event
