"""What the analysis hands to the rules: model handles and the ordered events of one scope."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst


# The path segment of a submodule reached by `model.modules()` / `.children()`: any one of them.
ANY_SUBMODULE = "*"


@dataclass(frozen=True)
class Handle:
    """A reference to (part of) one module object: `self.model.encoder` is (id of self.model, ("encoder",))."""

    obj: int
    sub: Tuple[str, ...] = ()
    text: str = ""

    def overlaps(self, other: "Handle") -> bool:
        if self.obj != other.obj:
            return False
        return all(a == b or ANY_SUBMODULE in (a, b) for a, b in zip(self.sub, other.sub))

    def covers(self, other: "Handle") -> bool:
        """Whether placing this places all of `other`: the same object, at `other`'s part or above it.
        Moving `self.sdt` moves none of `self.fc1`; `model.modules()` (a `*` part) reaches every part."""
        if self.obj != other.obj:
            return False
        sub = self.sub[:-1] if self.sub[-1:] == (ANY_SUBMODULE,) and len(other.sub) < len(self.sub) else self.sub
        return len(sub) <= len(other.sub) and all(a == b or ANY_SUBMODULE in (a, b) for a, b in zip(sub, other.sub))


# The arm index of a `try` body: it runs on every path, though an exception may cut it short, so an
# ending event in it is skipped on the paths through the handlers.
TRY_BODY = -1


@dataclass(frozen=True)
class Guard:
    """One condition on the path to an event: the `if` (or `while`, `case`) test and which way it went."""

    test: cst.BaseExpression
    holds: bool  # False on an `else` arm (and the arms after an `elif`)
    # What is true whenever the arm runs, as (name, truth): `if a and not b:` gives a, not b; a flag the
    # function computed (`use_ddp = ws > 1 and not args.fp16`) counts by its definition.
    facts: FrozenSet[Tuple[str, bool]] = field(default=frozenset(), compare=False)


@dataclass(frozen=True)
class Site:
    """Where an event happens: its node, the statements that contain it, and the path that reaches it."""

    order: int
    node: cst.CSTNode
    chain: Tuple[cst.CSTNode, ...]  # statements from the scope's own block down to the innermost one
    branches: Tuple[Tuple[int, int], ...] = ()  # (id of the if/try/match node, arm index) it sits in
    guards: Tuple[Guard, ...] = ()  # the conditions of those arms, outermost first
    loops: int = 0
    via: Optional[str] = None  # "setup_model()" when it happens inside a helper called here
    # Arms that had ended (`return`, `raise`, or `break`/`continue` inside this loop) before it ran:
    # no path through them reaches this site.
    dead: FrozenSet[Tuple[int, int]] = frozenset()
    # The conditions inside the helper (and its helpers) on the way to an event that happens there.
    inner: Tuple[Guard, ...] = ()
    # Inside a handler registered on an object, run when the object runs (`place() run by trainer.run()`).
    handler: Optional[str] = None

    @property
    def statement(self) -> cst.CSTNode:
        return self.chain[-1]

    @property
    def function(self) -> Optional[cst.FunctionDef]:
        """The function (or method) whose body it lies in; None at a module's top level."""
        first = self.chain[0] if self.chain else None
        return first if isinstance(first, cst.FunctionDef) else None

    def exclusive_with(self, other: "Site") -> bool:
        """True when no path runs both: different arms of one branch, or one sits in an arm that had
        ended before the other ran."""
        arms = dict(self.branches)
        if any(key in arms and arms[key] != arm and TRY_BODY not in (arm, arms[key]) for key, arm in other.branches):
            return True
        if self.dead.intersection(other.branches) or other.dead.intersection(self.branches):
            return True
        # conditions that cannot hold together: `if args.distributed:` and `if args.fp16 and not
        # args.distributed:` in one function; and those of the object's own methods it runs on the way
        # (`if self.is_fsdp_xla_enabled:` in `self._wrap_model()`), which speak of the same object
        return self.chain[:1] == other.chain[:1] and _contradict(self.guards + other.guards + _own(self.inner)
                                                                 + _own(other.inner))

    def on_every_path(self, first: "Site", last: "Site") -> bool:
        """Whether every path that runs `first` and then `last` also runs this site (which lies between
        them in source order): it sits in no arm that one of them does not sit in too."""
        handlers = {key for key, arm in last.branches if arm != TRY_BODY}
        return all(
            (key, arm) in first.branches or (key, arm) in last.branches or (arm == TRY_BODY and key not in handlers)
            for key, arm in self.branches
        )


def _own(guards: Tuple[Guard, ...]) -> Tuple[Guard, ...]:
    """A helper's conditions that speak of the object it runs on (kept only where that object is the
    caller's own: see `own_conditions`)."""
    return _about_self(guards, True)


def own_conditions(guards: Tuple[Guard, ...], same_object: bool) -> Tuple[Guard, ...]:
    """A callee's conditions as its caller keeps them: what they say of `self` is what they say of the
    caller's object only when the callee runs on it (`self._wrap_model()`); else `self` is another."""
    return guards if same_object else _about_self(guards, False)


def _about_self(guards: Tuple[Guard, ...], about: bool) -> Tuple[Guard, ...]:
    """The guards with only the facts that are (`about`) or are not about `self`'s attributes."""
    return tuple(Guard(g.test, g.holds, frozenset(f for f in g.facts if f[0].startswith("self.") is about))
                 for g in guards)


def _contradict(guards: Tuple[Guard, ...]) -> bool:
    known = {}
    for guard in guards:
        for name, truth in guard.facts:
            if known.setdefault(name, truth) != truth:
                return True
    return False


@dataclass(frozen=True, eq=False)  # one holder, one object: compared by identity
class HolderEvent:
    site: Site
    kind: str  # catalog holder kind
    label: str  # "SGD", "build_optimizer()"
    models: FrozenSet[Handle]
    var: Optional[str] = None  # the name it arrives under; a built one's first name is the scope's (`name_of`)
    bucket_view: bool = False
    copies: bool = False  # keeps a deep copy of the model (timm's ModelEma, AveragedModel)
    placed_copy: bool = False  # a copy told where to live (`device=`): a later move does not strand it
    attribute: str = ""  # built by a constructor into this attribute of the new object (`optimizer`)
    # A parameter of this function (`train()`): its callers built it, before any move made here.
    arrives: str = ""
    arrives_key: Tuple[str, str] = ("", "")  # (path, `train` or `Trainer` or `Trainer.fit`): its callers' target


@dataclass(frozen=True)
class RegroupEvent:
    """`optimizer.add_param_group({...})`, `optimizer.param_groups[i]["params"] += [...]`: the holders are
    pointed at parameters named now (a submodule's new parameters after it was replaced)."""

    site: Site
    holders: Tuple[HolderEvent, ...]


@dataclass(frozen=True)
class DroppedEvent:
    """Holders built as a keyword argument the called function never reads: nobody can use them."""

    site: Site
    holders: Tuple[HolderEvent, ...]


@dataclass(frozen=True)
class StateMovedEvent:
    """`state[k] = v.to(device)` over `optimizer.state`: the holders' state tensors follow the model (a
    helper that does it, `optimizer_to(optimizer, device)`, replays it at its calls). `objects`: the
    objects whose state moved, for the summaries of the function it happens in."""

    site: Site
    holders: Tuple[HolderEvent, ...]
    objects: FrozenSet[int] = frozenset()


@dataclass(frozen=True)
class RefusalEvent:
    """`if (self.fsdp or self.deepspeed) and optimizer is not None: raise ...` in the function these
    holders arrive in: the flags are false whenever they arrived, wherever the test lies, so a placement
    under one of them never meets them."""

    site: Site
    holders: Tuple[HolderEvent, ...]
    flags: FrozenSet[str]


class Elsewhere:
    """Where a helper of another module does it: the statement there, located only when a finding
    shows it (locating a node renders that module's excerpt, 0.3 s for a large class, and most events
    never reach a finding)."""

    __slots__ = ("_locate", "_node", "_where")

    def __init__(self, locate: Callable[[cst.CSTNode], Tuple[str, int, int]], node: cst.CSTNode) -> None:
        self._locate = locate
        self._node = node
        self._where: Optional[Tuple[str, int, int]] = None

    def where(self) -> Tuple[str, int, int]:
        """(path, line, 0-based column) of the statement there."""
        if self._where is None:
            self._where = self._locate(self._node)
        return self._where

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Elsewhere) and other._node is self._node

    def __hash__(self) -> int:
        return id(self._node)


@dataclass(frozen=True)
class PlacementEvent:
    site: Site
    handle: Handle
    kind: str  # catalog placement class
    label: str
    sync_wrapper: bool = False
    ddp: bool = False
    argument_text: str = ""  # `.to(device)`'s argument, to tell a repeated no-op move
    operation: str = ""  # the method or function name: `to_empty`, `float`, `fully_shard`
    # Holders that contain the model and are moved with it (`ema.to(device)` moves `EMA(model)`).
    carriers: Tuple["HolderEvent", ...] = ()
    elsewhere: Optional[Elsewhere] = None
    # `x = copy.deepcopy(x)`: the name now means a copy. Inside a helper that is a local name: the
    # caller's object is untouched, so a summary never passes it on.
    rebinds_name: bool = False
    # A keyword that decides the kind comes from where the analysis cannot see (`FSDP(m, **kwargs)`
    # may set `use_orig_params`): the weaker kind is assumed and messages say which keyword.
    unknown_keyword: str = ""
    # Made inside a context manager that re-points the optimizers at the moved parameters
    # (poutyne's `with self._update_optim_device(): self.network.cuda()`): the holders are in step.
    synced: bool = False
    # A move's device as a device value (see walker.Value.device_of): the objects whose place it is.
    device_of: FrozenSet[int] = frozenset()
    # In a summary: the same, as the arguments or attributes the callers fill in (walker.Origin).
    device_origins: Tuple[object, ...] = ()
    # Replayed at a call: the optimizers this call hands to parameters the callee takes them by; the
    # callee's side reports a pair with one of those (one bug, one report).
    handed_optimizers: Tuple["HolderEvent", ...] = ()
    # Replayed at a call of another module's function, class or object's method: that module's path (""
    # for one of this module). Where its side reports the pair, it does so only in a run that checks
    # that module, so the caller's side keeps the pair for the runs that check the caller alone.
    callee_module: str = ""
    # Made by a caller in another module on an object of this class after its constructor returned
    # (analysis/callers.py): that module's path. The caller's side reports the pair; this side does only in
    # a run that does not check that module.
    caller_module: str = ""
    # Replayed from a helper of the same module (no `elsewhere`): the statement there that makes it, so a
    # summary replayed in another module shows that statement, not the call that reached it.
    source: Optional[cst.CSTNode] = None
    # Made by a placement method the class's users call, inherited from this base (`imputer.to(device)` of
    # `BaseModel`): it goes where they say, so never where the object already is (no round trip).
    inherited_from: str = ""
    # To a device read from the object before an earlier move here (`device = next(m.parameters()).device;
    # m.cuda(); ...; m.to(device)`): back to where it was, not to where the last move put it.
    to_earlier_place: bool = False
    # A name rebound to an entry of an unpickled object (`self.model = checkpoint["model"]`): its id.
    unpickled_from: int = 0
    # Made in the statement that made the object (`net = Net().to(device)`): it ran wherever the object is.
    at_birth: bool = False
    # A wrap the catalog says is applied last (`torch.compile`), and whether its result is bound beside
    # the module, which keeps a name of its own (`model = torch.compile(original_model)`).
    applied_last: bool = False
    beside: bool = False

    @property
    def new_place(self) -> bool:
        return bool(self.inherited_from)


@dataclass(frozen=True)
class StateEvent:
    site: Site
    holder: HolderEvent
    method: str  # "step" or "load_state_dict"


@dataclass(frozen=True)
class ManagedEvent:
    site: Site
    holders: Tuple[HolderEvent, ...]
    label: str


@dataclass(frozen=True)
class RebindEvent:
    """The variable that held a holder now holds a new holder: the old one is superseded. Or the one
    saved with a model (`unpickled_from`, see heap.Held): superseded where that model replaced it."""

    site: Site
    old: HolderEvent
    new: Optional[HolderEvent]
    unpickled_from: int = 0


@dataclass(frozen=True)
class DiscardedWrapperEvent:
    site: Site
    handle: Optional[Handle]
    label: str
    # The name it was bound to (`_` in `model, _ = setup(model)`, or a local nothing reads), rather than
    # thrown away as a bare statement.
    name: str = ""


@dataclass(frozen=True)
class ForwardEvent:
    """A module handle is called (`model(x)`): training or evaluation runs through it here."""

    site: Site
    handle: Handle


@dataclass
class ScopeEvents:
    """The ordered events of one scope (module, function, or a class's methods taken together)."""

    name: str
    events: List[object] = field(default_factory=list)
    # A class's scope: its qualified name, as its methods' callers name them (`Solver.train`).
    class_name: Optional[str] = None
    # A class's methods that its `__init__` calls through `self`: they run inside it, not after it.
    init_calls: FrozenSet[str] = frozenset()
    # A framework's lifecycle (catalog.LIFECYCLES): (method, prefix) — `setUp` runs before each `test*`.
    runs_first: FrozenSet[Tuple[str, str]] = frozenset()
    # Objects built here from a class the analysis summarised (`metric = LearnedMetric()`): where they
    # are is known (where they were built, until moved), unlike what an unknown call returns.
    built_here: Set[int] = field(default_factory=set)
    # Objects a class call made here (`head = ArcMargin(64, n)`), each with the objects it was handed: an
    # earlier move of another object cannot have reached it (None: an argument that is no name or literal).
    class_made: Dict[int, Optional[FrozenSet[int]]] = field(default_factory=dict)
    # Objects a function's parameters hold as it starts (ids): where they are, its callers decide.
    arrived: Set[int] = field(default_factory=set)
    # Whether the objects built here start in float32 (the file leaves the default dtype alone).
    starts_float32: bool = False
    # The module the scope's code is in: the root of its top-level statements' liveness (stories._done_with).
    module: Optional[cst.Module] = None
    # In a file that never chooses the current CUDA device: the texts it passes as a wrapper's device
    # indices (`device_ids=[opt.local_rank]`), each a rank's own device, unlike `.cuda()` (cuda:0).
    rank_devices: FrozenSet[str] = frozenset()
    # Objects a managed call returned (`model, opt = amp.initialize(model, opt)`): the library placed
    # them on the run's device (or kept them where it requires them), so a later move there is no move.
    placed_by_library: Set[int] = field(default_factory=set)
    # A class's methods its callers call in this order on one object (`learner.compile(); learner.fit()`).
    ordered: FrozenSet[Tuple[str, str]] = frozenset()
    # A class's scope walks, besides its own methods, the inherited ones that call a method it overrides
    # (ids of their definitions): what they report alone, their base's scope reports already.
    dispatched: FrozenSet[int] = frozenset()
    # (method, the method it calls through `self`) -> the order of its last such call: what runs inside
    # it, after what (a map, not a list: the order question is asked for every pair of events).
    self_calls: Dict[Tuple[str, str], int] = field(default_factory=dict)

    # A class's scope: the objects its `__init__` built and keeps under an attribute of its own, by id, with
    # that attribute's path (module._kept_objects): what a caller's move of the new object reaches.
    kept_parts: Dict[int, Tuple[str, ...]] = field(default_factory=dict)

    # The name each holder built here is first bound to (`opt`, `self.optimizer`), by the holder's id: the
    # holder is emitted before its statement binds it, and an event is never changed once emitted.
    names: Dict[int, str] = field(default_factory=dict)

    def name_of(self, holder: "HolderEvent") -> Optional[str]:
        return holder.var or self.names.get(id(holder))

    def of_type(self, kind: type) -> List:
        return [event for event in self.events if isinstance(event, kind)]
