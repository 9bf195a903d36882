"""The abstract objects the walk binds names to: what a name may hold (`Binding`), what an expression
evaluates to (`Value`), where an object id came from (`Origin`), and how the values of several paths join.

Generic over PyTorch: objects are ids with parameter sets, members, fields and holders; what makes them
modules or optimizers is the effects' business (analysis/effects.py, analysis/holders.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple


from .events import Handle, HolderEvent, PlacementEvent

Env = Dict[str, "Binding"]
Arm = Tuple[int, int]
Callables = FrozenSet[Tuple[Optional[str], str]]



GLOBAL = "global"
STAR = "star"  # a `*args` parameter: the positional arguments from its index on
MODULE_SCOPE = "<module>"  # the scope of a module's own statements


@dataclass(frozen=True)
class Origin:
    """Where an object id came from, so a helper's events can be replayed at its call sites."""

    kind: str  # "param", "self", "local", STAR or GLOBAL (a name a function reads and never binds)
    key: str
    index: int = -1


@dataclass(frozen=True)
class Held:
    """What a name or an expression may hold: the facts a binding and a value share."""

    handle: Optional[Handle] = None  # the object, or None (a literal, an unknown call's result)
    params: FrozenSet[Handle] = frozenset()  # the objects whose parameters it carries
    holders: Tuple[HolderEvent, ...] = ()
    xla: bool = False
    alts: FrozenSet[Handle] = frozenset()  # the other objects it may be, on other paths
    members: FrozenSet[Handle] = frozenset()  # the modules a list, tuple or ModuleList of it holds
    element: bool = False  # one of a container's modules, bound by a loop or comprehension
    makes: Optional[str] = None  # a callable that builds a holder of this kind (`getattr(torch.optim, name)`)
    # A class or function of this file as a value (`placer_class=DevicePlacer`, a registry dict
    # `{"gpu": GpuPlacer, "cpu": CpuPlacer}`): (the constant key it sits under, or None; its name).
    # Calling the value calls each one it may be.
    callables: Callables = frozenset()
    # A device value: the device where these objects' tensors are (`next(model.parameters()).device`,
    # a batch sent there, its `.device`). One object: a move of that object there moves nothing.
    device_of: FrozenSet[int] = frozenset()
    # Tensors of an optimizer's state (`optimizer.state.values()`, an entry of it): the objects whose
    # state they are. Moving them moves the state (see events.StateMovedEvent).
    state_of: FrozenSet[int] = frozenset()
    # The object is a gradient-synchronizing wrapper (its label), not the module inside it: both share
    # one handle (a wrapper is transparent to placements), and only the wrapper syncs when it trains.
    wrapper: str = ""
    # The names a collection of string literals holds (`{"act", "cri"}`): a loop over it gives one of
    # them, and `setattr(self, name, value)` with such a name binds each attribute it may be.
    strings: FrozenSet[str] = frozenset()
    # What a managed call returned (`model, opt = accelerator.prepare(model, opt)`): the library placed
    # the model and remapped the optimizer itself, so the pair's order is its own (see replay._handed).
    managed: bool = False
    # Unpickled (`torch.load(path)`, an entry of what it returned, or what a call of the file hands a
    # parameter): new objects with parameters of their own, whatever object was saved.
    unpickled: bool = False
    # An entry of an unpickled object bound to a name (`checkpoint["model"]`): that object's id. Entries
    # of one unpickling share their parameters (`checkpoint["optimizer"]` holds `checkpoint["model"]`'s).
    unpickled_from: int = 0

    @property
    def holder(self) -> Optional[HolderEvent]:
        return self.holders[0] if self.holders else None

    @property
    def handles(self) -> Tuple[Handle, ...]:
        """Every object it may be, the primary one first."""
        if self.handle is None:
            return ()
        return (self.handle,) + tuple(sorted(self.alts - {self.handle}, key=handle_key))


@dataclass(frozen=True)
class Binding(Held):
    """What one name may hold where the walk is (its `handle` is always set). Never changed in place:
    an arm's copy of the environment shares bindings with the others until it rebinds them."""

    cpu: bool = False  # `device = torch.device("cpu")` on every path: moving there is a no-op


@dataclass(frozen=True)
class Value(Held):
    """What an expression evaluates to."""

    copy_of: Optional[Handle] = None  # `copy.deepcopy(x)`, or `x.to(device)` of a tensor `x`
    copy_label: str = "copy.deepcopy()"
    copy_operation: str = ""  # cat.TENSOR_COPY for a tensor's `.to()`
    leaf: bool = False  # a tensor made to be trained on its own (`torch.zeros(1, requires_grad=True)`)
    # Placements applied to a new object before it has a name (`model = Net().to(device)`).
    pending: Tuple[PlacementEvent, ...] = ()
    contains: bool = False  # a holder that keeps `handle` as a submodule (`EMA(model)`)
    # A tuple or list of known length: what each position holds (`return optimizer, scheduler`), so that
    # `opt, sched = build(model)` gives each name its own object.
    fields: Tuple["Value", ...] = ()
    items: Tuple["Value", ...] = ()  # iterated, it gives tuples with these fields (`zip(a, b)`)
    # A module the call made, with parameters of its own (what a helper returns that built one)
    new_module: bool = False
    # An object a class call made from none of the objects it was handed (what a helper returns that
    # called one): bound where a module an optimizer holds was, a new module (bindings._fresh_object)
    fresh: bool = False
    made_from: FrozenSet[Handle] = frozenset()  # the objects that class call was handed


EMPTY = Value()


def handle_key(handle: Handle) -> Tuple[int, Tuple[str, ...]]:
    return handle.obj, handle.sub


def first_handle(handles: FrozenSet[Handle]) -> Optional[Handle]:
    return min(handles, key=handle_key) if handles else None


def value_of(binding: Binding, handles: Tuple[Handle, ...]) -> Value:
    return Value(handles[0], binding.params, binding.holders, binding.xla, alts=frozenset(handles[1:]),
                 members=binding.members, makes=binding.makes, callables=binding.callables,
                 device_of=binding.device_of, state_of=binding.state_of, wrapper=binding.wrapper, strings=binding.strings,
                 managed=binding.managed, unpickled=binding.unpickled)


def element_of(source: Value) -> Value:
    """What a loop over `source` binds its target to: one of the modules it holds (`for part in
    [net.a, net.b]`, `for sub in net.modules()`, `for block in net.blocks`), or, for a loop over
    parameters, something that carries them but is no module."""
    if source.state_of:
        return Value(state_of=source.state_of)  # `for state in optimizer.state.values()`
    if source.items:
        return Value(params=source.params, fields=source.items)
    if source.members:
        return Value(first_handle(source.members), params=source.params, alts=source.members, element=True)
    if source.handle is not None and not source.holders:
        return Value(source.handle, params=source.params, alts=source.alts, strings=source.strings)
    return Value(params=source.params, strings=source.strings)


def unique_holders(holders: Iterable[HolderEvent]) -> Tuple[HolderEvent, ...]:
    found: List[HolderEvent] = []
    for holder in holders:
        if all(holder is not other for other in found):
            found.append(holder)
    return tuple(found)


def join_values(values: Sequence[Value]) -> Value:
    handles = [h for value in values for h in value.handles]
    return Value(
        handles[0] if handles else None,
        params=frozenset().union(*(value.params for value in values)),
        holders=unique_holders(h for value in values for h in value.holders),
        xla=any(value.xla for value in values),
        alts=frozenset(handles[1:]),
        members=frozenset().union(*(value.members for value in values)),
        device_of=_same_device(value.device_of for value in values),
        state_of=frozenset().union(*(value.state_of for value in values)),
        makes=any_maker(value.makes for value in values),
        managed=all(value.managed for value in values),
        unpickled=all(value.unpickled for value in values),
    )


def join_bindings(bindings: Sequence[Binding]) -> Binding:
    first = bindings[0]
    seen = {}
    for binding in bindings:
        for handle in (binding.handle, *binding.alts):
            seen.setdefault(handle_key(handle), handle)
    others = frozenset(h for key, h in seen.items() if key != handle_key(first.handle))
    return Binding(
        first.handle,
        params=frozenset().union(*(b.params for b in bindings)),
        holders=unique_holders(h for b in bindings for h in b.holders),
        xla=any(b.xla for b in bindings),
        cpu=all(b.cpu for b in bindings),
        alts=others,
        members=frozenset().union(*(b.members for b in bindings)),
        callables=frozenset().union(*(b.callables for b in bindings)),
        device_of=_same_device(b.device_of for b in bindings),
        state_of=frozenset().union(*(b.state_of for b in bindings)),
        makes=any_maker(b.makes for b in bindings),
        managed=all(b.managed for b in bindings),
        unpickled=all(b.unpickled for b in bindings),
    )


def any_maker(makers: Iterable[Optional[str]]) -> Optional[str]:
    """A callable that builds a holder on some path (`Adam if args.adam else SGD`): calling it may build one."""
    return next((maker for maker in makers if maker is not None), None)


def _same_device(devices: Iterable[FrozenSet[int]]) -> FrozenSet[int]:
    """A device value known on every path, the same on each; else unknown."""
    known = set(devices)
    return known.pop() if len(known) == 1 else frozenset()


class ModuleTables(dict):
    """Module-level names bound to a file's classes or functions (name -> (key or None, name) pairs),
    and `makers`: those bound to holder classes, alone or in a table (`OPTIMIZERS = {"adam": Adam,
    "sgd": SGD}`), by the kind they build."""

    def __init__(self) -> None:
        super().__init__()
        self.makers: Dict[str, str] = {}
