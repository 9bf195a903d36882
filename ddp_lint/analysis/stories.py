"""What happens to each holder's model after the holder is built: the facts every rule reads."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

import libcst as cst

from .. import catalog as cat
from .events import (
    DiscardedWrapperEvent,
    DroppedEvent,
    ForwardEvent,
    Handle,
    HolderEvent,
    Site,
    ManagedEvent,
    PlacementEvent,
    RebindEvent,
    RefusalEvent,
    RegroupEvent,
    ScopeEvents,
    StateEvent,
    StateMovedEvent,
)
from .liveness import dead_after, named_after
from .names import code_text, dotted_name, operands


@dataclass
class Step:
    """One placement that reaches the holder's model after the holder was built."""

    placement: PlacementEvent
    state: Optional[StateEvent]  # first load_state_dict/step on the holder before this placement
    stepped: Optional[StateEvent]  # first step() before this placement
    # Ending events (a managed call, a rebuild) that lie between on some paths only: the story holds
    # on the paths that skip them ("unless `use_apex`").
    skipped: Tuple[object, ...] = ()
    # A move back to the CPU (`.cpu()`): the optimizer's next step() after it, with no move away
    # between (later on a path through both, or earlier in a loop around both: the next pass).
    again: Optional[StateEvent] = None
    # The holder's state tensors moved to the model's device after this move (`state[k] = v.cuda()`):
    # the state follows the model, the order does not (the holder was built first).
    state_moved: Optional[StateMovedEvent] = None
    # A pair the other side reports in a module other than this one (the function or object called at
    # the placement; for a class, the caller that placed its object: `_callee_side`): that module's path.
    # The step stands only when no other step of the holder does, and its report is shown only in runs
    # that do not check that module (engine.py).
    deferred_to: str = ""


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
    dropped = {id(h) for e in events if isinstance(e, DroppedEvent) for h in e.holders}
    for index, holder in enumerate(events):
        if not isinstance(holder, HolderEvent) or id(holder) in dropped:
            continue
        story = _story(scope, index, holder)
        if story is not None:
            yield story


def _story(scope: ScopeEvents, index: int, holder: HolderEvent) -> Optional[HolderStory]:
    events = scope.events
    overlaps = lambda handle: any(handle.overlaps(model) for model in holder.models)  # noqa: E731
    # placements known to run before it, whichever method of a class was walked first
    earlier = [event for position, event in enumerate(events)
               if isinstance(event, PlacementEvent) and overlaps(event.handle)
               and not event.site.exclusive_with(holder.site)
               and (position < index if event.site.function is holder.site.function
                    else _runs_after(event.site, holder.site, scope))]
    dtensor = any(operation in cat.DTENSOR_PLACEMENTS for _, operation, _ in _placed_before(earlier))
    # what the rules and the fix planner read: the holder under the name this scope gave it
    story = HolderStory(dataclasses.replace(holder, var=scope.name_of(holder)) if holder.var is None else holder, scope)
    refused = frozenset().union(*(e.flags for e in scope.events
                                  if isinstance(e, RefusalEvent) and any(h is holder for h in e.holders)))
    states: List[StateEvent] = []
    endings: List[object] = []
    moved: List[PlacementEvent] = []  # the placements after the holder so far, on its paths
    seen, repointing = set(), _repointing(scope, holder)
    for event in events[index + 1 :]:
        if isinstance(event, StateEvent) and event.holder is holder:
            states.append(event)
        elif _ends_steps(story, holder, event, endings):
            continue
        elif isinstance(event, PlacementEvent) and overlaps(event.handle):
            if event.site.exclusive_with(holder.site) or any(carrier is holder for carrier in event.carriers):
                continue
            if refused and _under_flag(event.site, refused):
                continue  # the function it arrived in refuses it on this path (`raise` when the flag is on)
            if (_dead_before(story.holder, event) or _finished_before(scope, holder, event)
                    or _repointed_before_its_steps(repointing, event)):
                continue  # nothing uses the holder after this placement as it stands: never stepped again
            if (not _runs_after(holder.site, event.site, scope)
                    and not any(_used_before(s.site, event.site) for s in states)):
                continue  # two methods of a class: which runs first is unknown (unless it is `__init__`)
            # the statement that makes it, here and where a helper of another module does it
            made = (id(event.site.node), event.elsewhere, id(event.source), event.kind)
            if made in seen:
                moved.append(event)  # the same call on another object the name may hold: it moved that one
                continue
            held = _held_parts(holder, event)
            if _already_there(_placed_before(e for e in moved if _covers(e, held)
                                             and _same_place(e, event)
                                             and e.site.function is event.site.function
                                             and not e.site.exclusive_with(event.site)), event):
                continue  # where an earlier move after the holder put it already (`train_epoch` then `evaluate`)
            moved.append(event)
            owner = _callee_side(story.holder, holder, event, states)
            if owner is None:
                continue  # one bug, one report: the function called here reports it (state given here is ours)
            current = [e for e in endings if _between(e, holder.site, event.site) and (
                not isinstance(e, RebindEvent) or not e.unpickled_from or e.unpickled_from == event.unpickled_from)]
            if any(e.site.on_every_path(holder.site, event.site) for e in current):
                continue
            # a round trip, not the first move: an object built here must have been moved there itself;
            # another may come from a call on a model already moved (`model = convert(model)`)
            own = event.handle.obj in scope.built_here
            if _stays_on_cpu(event, earlier + moved[:-1], own) or _back_from_cpu(event, earlier, moved[:-1], own):
                continue
            # where the last move before the holder put what it reaches, on every path to here (for an
            # object from elsewhere, any earlier move of what the holder holds on any path: it may be the
            # object that move reached, `model = convert(model)`, and where it is is not known)
            before = (_on_every_way_together([e for e in earlier if _covers(e, held) and _places(e)], holder.site, event.site)
                      if own else _may_have_reached(earlier, event, scope))
            if _already_there(_placed_before(before, scope.rank_devices), event, scope.rank_devices):
                continue
            if own and scope.starts_float32 and _cast_to_where_it_was_built(event, earlier + moved[:-1]):
                continue
            if dtensor and event.operation in cat.SWAPPED_AFTER_DTENSOR:
                continue
            seen.add(made)
            # A class's methods do not run in source order: only state given in the holder's own
            # function, or earlier in the placement's function, is known to come first.
            known = [s for s in states if s.site.function in (holder.site.function, event.site.function)
                     and not s.site.exclusive_with(event.site)]
            state = known[0] if known else None
            stepped = next((s for s in known if s.method == cat.STEP), None)
            story.steps.append(Step(event, state, stepped, tuple(current), deferred_to=owner))
    story.steps = _one_side([step for step in map(lambda step: _stepped_again(scope, holder, step), story.steps) if step])
    return story


def _one_side(steps: List[Step]) -> List[Step]:
    """The steps of a holder's report: a caller's steps that the function it calls reports too stand
    only when nothing else is left to report here (see `_callee_side`)."""
    return steps if all(step.deferred_to for step in steps) else [step for step in steps if not step.deferred_to]


def _dead_before(holder: HolderEvent, event: PlacementEvent) -> bool:
    """A holder kept only under a local name (`trainer.optimizer` of a local `trainer`) that is dead
    after the placement's statement (analysis/liveness.py): the placement cannot touch its state."""
    function = holder.site.function
    root = (holder.var or "").split(".", 1)[0]
    if function is None or not root or root == "self" or holder.arrives or event.site.function is not function:
        return False
    return dead_after(function, root, event.site.statement)


def _ends_steps(story: HolderStory, holder: HolderEvent, event, endings: List[object]) -> bool:
    """Apply an event that ends or remaps the holder's story (a managed call, its state moved after the
    model, a regroup, a rebuild) to the steps so far; False when the event is none of those."""
    steps = story.steps
    if isinstance(event, ManagedEvent) and any(held is holder for held in event.holders):
        endings.append(event)  # handed to a framework that remaps it, on the paths through it
        if holder.arrives:
            # A function handed the optimizer that regroups or rewraps it after its own placement
            # owns the order, even on one arm only (`if optimizer is not None:`).
            story.steps = [step for step in steps if not _between(event, holder.site, step.placement.site)]
    elif isinstance(event, StateMovedEvent) and any(held is holder for held in event.holders):
        # Its state moved after the model, in the placement's function: the state follows the model. A
        # function handed the optimizer keeps the two in step so (the order is its caller's); one that
        # built the optimizer before the move still has the stateless warning: moving the state keeps
        # neither the parameters the optimizer holds on XLA nor under the overwrite flag.
        def follows(step: Step) -> bool:
            return (step.placement.kind == cat.MOVE and event.site.function is step.placement.site.function
                    and event.site.order > step.placement.site.order
                    and not event.site.exclusive_with(step.placement.site))

        story.steps = [step if not follows(step) else
                       dataclasses.replace(step, state=None, stepped=None, state_moved=event)
                       for step in steps if not (holder.arrives and follows(step))]
    elif isinstance(event, RegroupEvent) and any(held is holder for held in event.holders):
        # pointed at the new parameters after a submodule was replaced, on every path from it: the
        # replaced ones it still holds get no gradient, the new ones train
        story.steps = [step for step in steps if not (
            step.placement.kind == cat.REPLACE and _follows_on_every_path(event.site, step.placement.site))]
    elif isinstance(event, RebindEvent) and event.old is holder:
        # Rebuilt after a placement on every path through it: the early holder is superseded there. The
        # optimizer saved with a model is in step with that model only (another file's is not).
        ends = _between if holder.arrives else _ends_between
        story.steps = [step for step in steps if not (ends(event, holder.site, step.placement.site) and (
            not event.unpickled_from or step.placement.unpickled_from == event.unpickled_from))]
        endings.append(event)
    else:
        return False
    return True


def _same_place(earlier: PlacementEvent, event: PlacementEvent) -> bool:
    """Two moves to one place: the same device spelled the same, or the same device value under another
    name (`model.to(rank)`, then `self.model.to(self.rank)` after `self.rank = rank`)."""
    return earlier.argument_text == event.argument_text or (
        bool(earlier.device_of) and earlier.device_of == event.device_of and not event.to_earlier_place)


def _trips(event: PlacementEvent, before: List[PlacementEvent]) -> List[PlacementEvent]:
    return [e for e in before if e.kind in (cat.MOVE, cat.HOME) and e.handle.overlaps(event.handle)
            and not e.site.exclusive_with(event.site)]


def _stays_on_cpu(home: PlacementEvent, before: List[PlacementEvent], own: bool) -> bool:
    """Whether a move back to the CPU moves nothing: the last move before it went to the CPU too, or
    none did and the object was built here (on the CPU). An object from elsewhere may be anywhere."""
    if home.kind != cat.HOME:
        return False
    trips = _trips(home, before)
    return trips[-1].kind == cat.HOME if trips else own


def _cast_to_where_it_was_built(cast: PlacementEvent, before: List[PlacementEvent]) -> bool:
    """Whether a cast of an object built here (in float32) to float32 converts nothing: no cast of it
    came first (`rencoder.float()` before an ONNX export of a model never cast)."""
    return (cast.kind == cat.CAST and _target(cast) == cat.DEFAULT_DTYPE
            and not any(e.kind == cat.CAST and e.handle.overlaps(cast.handle) for e in before))


def _back_from_cpu(move: PlacementEvent, earlier: List[PlacementEvent], after: List[PlacementEvent],
                   own: bool) -> bool:
    """Whether a move returns the model from a trip to the CPU made after the holder (`model.cpu()` to
    save, then `model.to(device)`): it goes back where it was, unless that trip moved nothing."""
    trips = _trips(move, after) if move.kind == cat.MOVE else []
    return bool(trips) and trips[-1].kind == cat.HOME and not _stays_on_cpu(
        trips[-1], earlier + after[:after.index(trips[-1])], own)


def _finished_before(scope: ScopeEvents, holder: HolderEvent, event: PlacementEvent) -> bool:
    """An optimizer that a call built and stepped before returning (`self.train()` building
    `self.optimizer` and running its loop), and that nothing steps after this placement: done with,
    whatever the placement does (a `test()` that wraps the model to evaluate)."""
    if holder.site.via is None:
        return False
    steps = [e for e in scope.events if isinstance(e, StateEvent) and e.holder is holder and e.method == cat.STEP]
    trained = any(s.site.node is holder.site.node and s.site.order > holder.site.order for s in steps)
    return trained and not any(s.site.order > event.site.order for s in steps)


def _repointing(scope: ScopeEvents, holder: HolderEvent) -> Optional[Tuple[List[Site], List[Site]]]:
    """A class's re-pointings of the optimizer (a regroup, a handover that re-points it, a rebuild under
    its name) and its uses of it that are not inside a method the class calls itself (those are judged
    where they are called: their replay there); None when nothing re-points it (see below)."""
    if scope.class_name is None:
        return None
    # the optimizer, and those that replace it under its name (`self.optimizer = Adam(...)` in `train()`)
    family = [holder] + [e.new for e in scope.events if isinstance(e, RebindEvent) and e.old is holder and e.new]
    repoints = [e.site for e in scope.events if (isinstance(e, (RegroupEvent, ManagedEvent)) and any(
        held is h for held in e.holders for h in family)) or (isinstance(e, RebindEvent) and e.old is holder)]
    if not repoints:
        return None
    callees = {callee for _, callee in scope.self_calls}
    uses = [e.site for e in scope.events if isinstance(e, StateEvent) and any(e.holder is h for h in family)
            and not (e.site.function is not None and e.site.function.name.value in callees)]
    return repoints, uses


def _repointed_before_its_steps(repointing: Optional[Tuple[List[Site], List[Site]]], event: PlacementEvent) -> bool:
    """A class whose every use of the optimizer comes after it re-points the optimizer at the model's
    parameters as they are then (`reset_optimizer(self.optimizer, self.model)` before the training
    loop): a placement in a method that does not use it afterwards (`eval()` moving the model) leaves
    nothing stale, whatever method runs next. The placement's own method must re-point after it."""
    if repointing is None or event.site.function is None:
        return False
    repoints, uses = repointing

    def repointed(use: Site) -> bool:
        after = use.function is event.site.function and use.order > event.site.order
        return any(r.function is use.function and r.order < use.order and _encloses(r, use)
                   and (not after or r.order > event.site.order) for r in repoints)

    return bool(uses) and all(use.exclusive_with(event.site) or repointed(use) for use in uses)


def _stepped_again(scope: ScopeEvents, holder: HolderEvent, step: Step) -> Optional[Step]:
    """A move back to the CPU is a bug of the optimizer only if it steps again with its state on the
    accelerator: kept with the step that does (`again`), dropped otherwise (the model saved or done
    with). So is a name rebound to a new object (`model = torch.load(best)`, `model = copy.deepcopy(
    model)`): the optimizer keeps the old one, which matters only if it steps again (the new model
    trained with a stale optimizer), not when the best model is reloaded to be evaluated. Any other
    step is kept as it is."""
    home = step.placement
    rebound = home.kind == cat.REPLACE and home.rebinds_name
    if home.kind != cat.HOME and not rebound:
        return step
    if rebound and not _done_with(scope, holder, home):
        return step  # an attribute, or a local still named after (returned, handed on, stepped)
    away = [] if rebound else [e.site for e in scope.events if isinstance(e, PlacementEvent) and e.kind == cat.MOVE
                               and e.handle.overlaps(home.handle) and e.site.function is home.site.function]
    for event in scope.events:
        if not (isinstance(event, StateEvent) and event.holder is holder and event.method == cat.STEP):
            continue
        if rebound and event.site.via is None:
            continue  # a step through the name, which is never read again (see _done_with)
        site = event.site
        if site.function is not home.site.function or site.exclusive_with(home.site):
            continue
        if site.order > home.site.order:
            between = [a for a in away if home.site.order < a.order < site.order]
        else:
            loop = next((n for n in reversed(site.chain) if isinstance(n, (cst.For, cst.While))
                         and any(n is m for m in home.site.chain)), None)
            if loop is None:
                continue
            # the next pass: a move away later in this pass or earlier in the next one brings it back
            between = [a for a in away if any(loop is m for m in a.chain)
                       and (a.order > home.site.order or a.order < site.order)]
        if not between:
            return step if rebound else dataclasses.replace(step, again=event)
    return None


def _done_with(scope: ScopeEvents, holder: HolderEvent, placement: PlacementEvent) -> bool:
    """Whether the holder's own name is never named again once the placement ran, in the function (or
    the module's top level) that built it and made the placement: whatever steps it after does so
    through a call replayed here (a global read by `train()`), or not at all."""
    root = holder.site.function or scope.module
    var = holder.var or scope.name_of(holder) or ""
    if (root is None or not var or "." in var or holder.arrives or placement.site.via is not None
            or placement.site.function is not holder.site.function):
        return False
    return not named_after(root, var, placement.site.statement)


def _callee_owns(holder: HolderEvent, placement: PlacementEvent) -> bool:
    """Whether the pair is a bug of the function called at the placement's site, reported there: the
    call built the holder and made the placement itself (a constructor that builds its optimizer and
    then moves its model), or this function was handed the optimizer and hands it on, with the
    model, to the call that moves the model (`super().__init__(model, optimizer)`)."""
    if placement.site.via is None:
        return False
    if holder.site.node is placement.site.node:
        return True
    if any(handed is holder for handed in placement.handed_optimizers):
        return True  # handed to a parameter the callee takes as its optimizer: its side reports the pair
    call = placement.site.node
    return bool(holder.arrives and holder.var and isinstance(call, cst.Call)
                and any(dotted_name(arg.value) == holder.var for arg in call.args))


def _callee_side(named: HolderEvent, holder: HolderEvent, placement: PlacementEvent, states) -> Optional[str]:
    """Whether the function or object called at the placement reports the pair on its side: "" when
    it does not (state given here first is this side's), None when it does in this module, and the
    path of its module when that is another module: its report is shown only by a run that checks
    that module, so this side keeps the pair for the runs that do not (`ddp-lint train.py` alone must
    still say that the `Trainer(model, optimizer)` it calls moves the model after `train.py` built the
    optimizer; `findings.shown_in_run`). `named`: the holder under the name this scope gave it."""
    if placement.caller_module:
        return placement.caller_module  # a caller's placement of this class's object: that side's report
    if states or not (_callee_owns(holder, placement) or _object_owns(named, placement)):
        return ""
    return placement.callee_module or None


def _object_owns(holder: HolderEvent, placement: PlacementEvent) -> bool:
    """`trainer = Trainer(model); trainer.fit()`: the optimizer the object's constructor keeps and the
    move its own method makes are one bug of its class, which the class's scope (or its module's)
    reports."""
    call = placement.site.node
    if placement.site.via is None or not holder.attribute or not holder.var or not isinstance(call, cst.Call):
        return False
    owner = dotted_name(call.func.value) if isinstance(call.func, cst.Attribute) else None
    return owner is not None and holder.var == f"{owner}.{holder.attribute}"


def _held_parts(holder: HolderEvent, event: PlacementEvent) -> List[Handle]:
    """What of the parameters the holder holds a placement reaches: the deeper of the two handles."""
    return [model if len(model.sub) >= len(event.handle.sub) else event.handle
            for model in holder.models if model.overlaps(event.handle)]


def _covers(earlier: PlacementEvent, held: List[Handle]) -> bool:
    """Whether an earlier placement reached all of those parts: moving one child of a module (`self.sdt
    = SDT().to(device)` in a constructor) leaves its other children where they were built."""
    return all(earlier.handle.covers(part) for part in held)


def _placed_before(placements, ranks: FrozenSet[str] = frozenset()) -> List[Tuple[str, str, str]]:
    """(kind, operation, target) of each move and cast that reached the model before the holder."""
    return [
        (cat.MOVE if e.kind == cat.HOME else e.kind, e.operation, cat.CPU if e.kind == cat.HOME else _target(e, ranks))
        for e in placements if _places(e)
    ]


def _places(event: PlacementEvent) -> bool:
    """A placement that says where the parameters are or what they are (a move, a cast, a DTensor
    layout); a wrap says neither, so the arms of an `if` that each wrap do not make a move in one of
    them happen on every path."""
    return event.kind in (cat.MOVE, cat.CAST, cat.HOME) or event.operation in cat.DTENSOR_PLACEMENTS


# Two spellings of the device the run uses that are different devices in a file that never chooses the
# current one (see ScopeEvents.rank_devices): cuda:0, and each process's own index.
_CURRENT, _RANKS_OWN = "<the current device>", "<the rank's own device>"


def _target(event: PlacementEvent, ranks: FrozenSet[str] = frozenset()) -> str:
    """Where a move goes or what a cast makes, spelled the same way for the same place: "" for a move
    to the device the run uses (`.cuda()`, `.to(device)`), a literal only when the code names one."""
    if event.kind == cat.CAST:
        text = (event.argument_text or event.operation).replace(cat.TORCH_PREFIX, "")
        return cat.DTYPE_ALIASES.get(text, text)
    if event.to_earlier_place:
        # where the object was before an earlier move: a place of its own, the same only for the same read
        return "<where it was: %s>" % ",".join(map(str, sorted(event.device_of)))
    text = event.argument_text.strip().strip("'\"")
    if ranks:
        first = "".join(event.argument_text.split(",")[0].split())
        if first in ranks:
            return _RANKS_OWN
        if first.strip("'\"") in cat.CURRENT_DEVICE_TEXTS:
            return _CURRENT
    return text if text.startswith(cat.NAMED_DEVICE_PREFIXES) else ""


def _may_have_reached(earlier: List[PlacementEvent], event: PlacementEvent, scope: ScopeEvents) -> List[PlacementEvent]:
    """The earlier placements that may have put the placed object where it is: any, for an object from
    elsewhere (`model = convert(model)` may be the object an earlier move reached); for one a class call made
    here, only its own and those of the objects that call was handed (`head = ArcMargin(64, n)` is no object
    `net.to(device)` reached, while `Wrapper(net)` holds what it did)."""
    made = scope.class_made.get(event.handle.obj)
    if made is None:
        return earlier
    return [e for e in earlier if e.handle.obj == event.handle.obj or e.handle.obj in made]


def _already_there(placed: List[Tuple[str, str, str]], event: PlacementEvent,
                   ranks: FrozenSet[str] = frozenset()) -> bool:
    """A move or cast is a round trip when the last placement of its kind before the holder went to
    the same place; "already placed" means already placed *there*. The run's device spelled without a
    name ("") is either of the two it may be; those two differ."""
    if event.kind not in (cat.MOVE, cat.CAST) or event.new_place:
        return False
    targets = [target for kind, _, target in placed if kind == event.kind]
    if not targets:
        return False
    last, this = targets[-1], _target(event, ranks)
    return last == this or {last, this} in ({"", _CURRENT}, {"", _RANKS_OWN})


def _runs_after(first: Site, second: Site, scope: ScopeEvents) -> bool:
    """Source order is execution order within one function; across a class's methods only `__init__`
    is known to run first, and not before the methods it calls itself, a framework's lifecycle method
    before the methods it prepares (`setUp` before each `test*`), a method before another when the
    callers call them in that order, and an event of a method before another method that method calls
    after it (`self._move_model_to_device()` then `self.train()`). An event replayed from a helper
    (`self.setup()`) is ordered at its call."""
    a, b = first.function, second.function
    if a is b:
        return True
    if a is None:
        return False
    if a.name.value == "__init__":
        return b is None or b.name.value not in scope.init_calls
    return b is not None and ((a.name.value, b.name.value) in scope.ordered or any(
        a.name.value == method and b.name.value.startswith(prefix) for method, prefix in scope.runs_first)
        or scope.self_calls.get((a.name.value, b.name.value), -1) > first.order)


def _on_every_way_together(earlier: List[PlacementEvent], holder: Site, placement: Site) -> List[PlacementEvent]:
    """The earlier placements that ran on every path to the holder and the placement: each on its own
    (see `_on_every_way`; one made in the statement that made the object ran wherever the object is), or
    those of every arm of one `if` together (`if gpu is not None: model.cuda(gpu)` / `else: model.cuda()`)."""
    kept = {id(e) for e in earlier if e.at_birth or _on_every_way(e.site, holder, placement)}
    arms: Dict[int, Tuple[cst.If, Set[int]]] = {}
    for e in earlier:
        if id(e) in kept or e.site.function is not holder.function:
            continue
        branch = next(((key, arm) for key, arm in e.site.branches if (key, arm) not in holder.branches), None)
        node = next((n for n in e.site.chain if id(n) == branch[0]), None) if branch is not None else None
        if isinstance(node, cst.If):
            arms.setdefault(id(node), (node, set()))[1].add(branch[1])
    covered = {key for key, (node, seen) in arms.items() if 0 < _arm_count(node) <= len(seen)}
    return [e for e in earlier if id(e) in kept or any(key in covered for key, _ in e.site.branches)]


def _arm_count(node: cst.If) -> int:
    """How many arms an `if` chain has, counting its `else`; 0 without one (some path runs none)."""
    count, tail = 1, node.orelse
    while isinstance(tail, cst.If):
        count, tail = count + 1, tail.orelse
    return count + 1 if isinstance(tail, cst.Else) else 0


def _on_every_way(earlier: Site, holder: Site, placement: Site) -> bool:
    """Whether an earlier placement ran on every path that built the holder and reaches the placement:
    it encloses the holder, or the conditions it sits under hold there too (`if args.cuda:` before and
    after); one only in an arm the holder's path may skip (`if distributed: model.cuda()`) says nothing
    of the other path. One in another method is taken as it is."""
    if earlier.function is not holder.function or _encloses(earlier, holder):
        return True
    own = {(code_text(g.test), g.holds) for g in earlier.guards[len(_shared_guards(earlier, holder)):]}
    return own <= {(code_text(g.test), g.holds) for g in placement.guards}


def _shared_guards(a: Site, b: Site) -> Tuple:
    shared = []
    for x, y in zip(a.guards, b.guards):
        if x.test is not y.test or x.holds != y.holds:
            break
        shared.append(x)
    return tuple(shared)


def _encloses(site: Site, other: Site) -> bool:
    """Whether `site` runs whenever `other` does: in the same function, in a block that encloses
    `other` (every arm and loop it sits in holds `other` too), on no path that had ended."""
    return (site.function is other.function and site.dead <= other.dead  # arms ended before it, ended before both
            and site.chain[:-1] == other.chain[:len(site.chain) - 1])


def _used_before(use: Site, placement: Site) -> bool:
    """Whether a use of the holder (`self.optimizer.step()`) runs before the placement on every path to
    it, in the placement's own function: the holder existed by then, whichever method built it."""
    return (use.via is None and use.order < placement.order and _encloses(use, placement)
            and use.chain[-1] is not placement.chain[-1])


def _follows_on_every_path(later: Site, earlier: Site) -> bool:
    """Whether `later` runs after `earlier` whenever `earlier` runs."""
    return later.order > earlier.order and _encloses(later, earlier)


def _between(ending, first: Site, last: Site) -> bool:
    """Whether an ending event can run between two events: on a path with both, in the function of
    one of them (another method of the class may not run in between at all)."""
    site = ending.site
    return (not site.exclusive_with(first) and not site.exclusive_with(last)
            and site.function in (first.function, last.function))


def _ends_between(ending, first: Site, last: Site) -> bool:
    return _between(ending, first, last) and ending.site.on_every_path(first, last)


def _under_flag(site, flags: FrozenSet[str]) -> bool:
    """Whether the site runs only when one of these flags is on (an arm of `if flag:` or `if flag and
    ...:`, here or inside the helper that makes it)."""
    return any(guard.holds and any(dotted_name(c) in flags for c in operands(guard.test, cst.And))
               for guard in site.guards + site.inner)


def conversions_after_wrap(scope: ScopeEvents) -> Iterator[ConversionAfterWrap]:
    """Each move or cast that follows a DDP wrap of its model on some path, once per conversion (the
    first wrap it follows names the story)."""
    placements = [(index, event) for index, event in enumerate(scope.events) if isinstance(event, PlacementEvent)]
    conversions = [(index, event) for index, event in placements if event.kind in (cat.MOVE, cat.CAST)]
    reported = set()
    for index, wrap in placements:
        if not wrap.ddp:
            continue  # FSDP1 handles a later `_apply` (its DEVICE_AFTER init mode); DDP does not
        moved_before = wrap.handle.obj in scope.placed_by_library or any(
            event.kind == cat.MOVE and event.handle.overlaps(wrap.handle) for before, event in placements if before < index
        )
        for after, event in conversions:
            if after <= index or id(event.site.node) in reported:
                continue
            if not event.handle.overlaps(wrap.handle) or event.site.exclusive_with(wrap.site):
                continue
            if not _runs_after(wrap.site, event.site, scope):
                continue
            if event.site.via is not None and (event.site.node is wrap.site.node or _one_object(wrap, event)):
                continue  # both inside the function called here, or the object's class: it reports them
            if event.operation == cat.FLOAT32_CAST:
                continue  # parameters are float32 already unless cast before; a no-op keeps DDP's hooks
            if event.kind == cat.MOVE and (moved_before or _moved_there_under_its_name(wrap, event, placements[:index], scope)):
                continue  # already on its device before wrapping: moving "again" is a no-op
            reported.add(id(event.site.node))
            yield ConversionAfterWrap(wrap, event, scope)


def _moved_there_under_its_name(wrap: PlacementEvent, event: PlacementEvent, before, scope: ScopeEvents) -> bool:
    """An object this function did not build, under the name an earlier move reached (`model.to(device)`,
    then `model = convert(model)`), is taken to be where that move put it: a call that transforms a
    placed module returns it, or a module built where it is. A later move to that same place is a no-op."""
    if wrap.handle.obj in scope.built_here:
        return False
    return any(prior.kind == cat.MOVE and prior.handle.text == wrap.handle.text and _same_place(prior, event)
               and not prior.site.exclusive_with(wrap.site) for _, prior in before)


def _one_object(wrap: PlacementEvent, event: PlacementEvent) -> bool:
    """`solver = Solver(model)` wrapped the model and `solver.fit()` moves it: a pair of the object's
    class (its constructor and its method), which the class's scope reports."""
    call, statement = event.site.node, wrap.site.statement
    if wrap.site.via is None or not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
        return False
    small = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
    made = {dotted_name(target.target) for s in small if isinstance(s, cst.Assign) and s.value is wrap.site.node
            for target in s.targets}
    return dotted_name(call.func.value) in made - {None}


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
