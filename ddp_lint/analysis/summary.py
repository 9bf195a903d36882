"""What calling a function of the project does, seen from outside: the summary its callers replay."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, List, NamedTuple, Optional, Tuple

import libcst as cst

from .events import Handle, HolderEvent, PlacementEvent, Site
from .heap import Origin, Value

NONE_HANDED = "none"  # a call hands the parameter no optimizer (see ScopeWalker._handed)
MANAGED_HANDED = "managed"  # it hands what a managed call returned: the library owns that pair's order
UNPICKLED_HANDED = "unpickled"  # it hands what unpickling made (`agent.load_state_dict(torch.load(path))`)
ABSENT_HANDED = "absent"  # it passes nothing there, and the default is no falsy literal (`optimizers=(None, None)`)


@dataclass(frozen=True)
class HandedMaker:
    """A call hands the parameter a callable that builds a holder of this kind (`opt_fn=torch.optim.Adam`,
    `lambda params: Adam(params, lr=1e-3)`): the callee's call of that parameter builds one there."""

    kind: str


@dataclass(frozen=True)
class HandedBuilt:
    """A call hands the parameter an optimizer its caller built in its own scope: the callee side names
    that statement beside the call, since moving it after the placement is the callers' fix."""

    node: Optional[cst.CSTNode]  # the call that builds it (`AdamW(...)`) in the caller's module; None: the argument
    label: str  # "AdamW"
    # The callee's parameters this call hands an object holding what the optimizer holds (`Trainer(actor,
    # opt)` with `opt` on `actor.net`: `actor`); None where what an argument holds is unknown
    holds: Optional[FrozenSet[str]] = None


class CallFact(NamedTuple):
    """One call of a project function, class or method, for its callee side (see ScopeWalker.calls)."""

    callee: Tuple[str, str]  # (path, `train` or `Trainer` or `Trainer.fit`)
    placed: FrozenSet[tuple]  # the signatures of the callee's placements already made on what is passed
    handed: Dict[str, object]  # what the call hands each parameter that may receive an optimizer
    # (the caller's path, the call): where a callee-side report names its callers; None where no call
    # of the code is meant (a module method counted for a method's callers)
    site: Optional[Tuple[str, cst.Call]] = None
    # A class's constructor call: the placements the caller's scope then makes on the new object (filled
    # as its walk goes on), which its class's side reports in a run that does not check the caller; and,
    # where the caller is a constructor that keeps the object (`self._wm = WorldModel(...)`), that class's
    # key and the attribute's path: its own callers' placements of their objects reach this one there
    after: Optional[list] = None
    kept_as: Optional[list] = None


def calls_of(key: Tuple[str, str], calls: List[CallFact], project) -> Optional[List[CallFact]]:
    """Every known call of the function, class or method `key`: this file's (`calls`, its analysis's)
    and the project's other modules'; None when the project cannot say (a tree too large to search)."""
    facts = [fact for fact in calls if fact.callee == key]
    if project is not None:
        elsewhere = project.call_facts(key)
        if elsewhere is None:
            return None
        facts.extend(elsewhere)
    return facts


# The callee a method call goes to when its receiver is a module by use (an optimizer holds its
# parameters): the library's module method, not a project class's (see ProjectIndex.call_facts)
LIBRARY_MODULE = "<library module>"

class Instance(NamedTuple):
    """An object built from a summarised class."""

    methods: Callable[[str], Optional["HelperSummary"]]  # its class's method summaries, by name
    attributes: Dict[str, Tuple[Handle, ...]]  # what its attributes hold: `self.model` -> the caller's model
    handed: Tuple[HolderEvent, ...]  # the holders handed to its constructor
    locate: Optional[Callable[[cst.CSTNode], Tuple[str, int, int]]]  # where its class is, in another module
    class_name: str
    parameter_attributes: Dict[str, FrozenSet[Handle]]  # attributes carrying the arguments' parameters
    # The other classes the object may be (a factory that returns one of several classes' objects): a
    # method call does what any of them does.
    others: Tuple["Instance", ...] = ()
    # (path, class) of its class, as the callee side names a method's callers ((path, "Class.method")).
    key: Optional[Tuple[str, str]] = None


class Part(NamedTuple):
    """What a caller hands in (`origin`: an argument, `self`, the new object), or a submodule of it
    (`sub`: `("encoder",)` for `model.encoder`)."""

    origin: Origin
    sub: Tuple[str, ...]


class SummaryPlacement(NamedTuple):
    """A placement of what a caller hands in, replayed at each call on the caller's object."""

    origin: Origin
    sub: Tuple[str, ...]
    event: PlacementEvent


class BuiltHolder(NamedTuple):
    """A holder the function builds on what its callers hand in: its catalog kind, its label, the parts
    it holds, and whether it is a ZeRO optimizer with bucket views."""

    kind: str
    label: str
    models: List[Part]
    bucket_view: bool


class KeptHolder(NamedTuple):
    """A holder a method builds and keeps on the object (`self.optimizer = SGD(self.model.parameters())`)."""

    kind: str
    label: str
    models: List[Part]
    bucket_view: bool
    attribute: str  # `self.optimizer`


class Constructed(NamedTuple):
    """One step of a constructor, in its order: a holder built (`event` a HolderEvent, `label` its label,
    `attribute` where the new object keeps it) or a placement of the new object (`event` a
    PlacementEvent, `label` empty)."""

    event: object
    label: object
    models: List[Part]
    bucket_view: bool
    attribute: str


class ArgumentState(NamedTuple):
    """A state call on an argument (`optimizer.load_state_dict(...)`), with where in the function's order."""

    origin: Origin
    method: str
    order: int


class Handling(NamedTuple):
    """Where the function hands an argument to a call that takes model and optimizer together."""

    origin: Origin
    site: Site


class ReturnedInstance(NamedTuple):
    """An object a function returns that it built from a summarised class (`return Backend(model)`): what
    its attributes keep, as the function's arguments, so that a caller's `backend.setup()` follows."""

    methods: Callable[[str], Optional["HelperSummary"]]
    attributes: Dict[str, Tuple[Part, ...]]
    locate: Optional[Callable[[cst.CSTNode], Tuple[str, int, int]]]
    class_name: str
    parameter_attributes: Dict[str, Tuple[Part, ...]]


class ReturnedField(NamedTuple):
    """One position of a returned tuple: a holder built there (`kind` "holder", `what` a BuiltHolder),
    an argument handed back (`kind` "param", `what` its index), a gradient-synchronizing wrapper of
    what another position holds (`kind` "wrapper", `what` (its label, that position)), or what a
    managed call returned (`kind` "managed"). `kept`: the attribute a returned holder is kept in on the
    object too (`self.optimizer = SGD(...); return lr, self.optimizer`): one optimizer, not two."""

    kind: str
    what: object
    kept: str = ""


@dataclass
class HelperSummary:
    """What calling a same-module function does to its arguments (and `self.*`), seen from outside."""

    name: str
    placements: List[SummaryPlacement] = field(default_factory=list)
    holder: Optional[BuiltHolder] = None
    holder_kept: str = ""  # the attribute the returned holder is kept in on the object too (see ReturnedField)
    returns_param: Optional[int] = None
    # It returns an attribute of its object (`return self.model`, a getter or a `@property`): the
    # caller's `runner.get_model()` is the model the object keeps.
    returns_self: Optional[Part] = None
    # It returns a list or tuple of attributes of its object (`return [self.policy, self.qf]`): a loop
    # over the caller's `trainer.networks` reaches each module the object keeps.
    returns_self_members: Tuple[Part, ...] = ()
    reads_as_attribute: bool = False  # a `@property`: `trainer.networks` runs it without a call
    returns_value: bool = True  # a `return` with a value on some path (False: its callers get None)
    # Every `return` hands back a module it made (`return nn.Sequential(...)`): a caller's
    # `agent.net = self.create_network()` puts new parameters where the old ones were.
    returns_new_module: bool = False
    # Every `return` hands back an object a class call made (`return NN(...).to(self.device)` of a library's
    # class): where the caller binds it in place of a module, a new one unless the call was handed that
    # module (types from use). The parts of the caller's objects the class call was handed; None when
    # a `return` gives another value.
    returns_fresh: Optional[Tuple[Part, ...]] = None
    param_names: Tuple[str, ...] = ()
    # Parameters declared as modules whatever their names (`encoder: ModelWithoutAttention`, a project
    # class derived from `nn.Module`), or known as the module the handed optimizer trains by the file's
    # uses (holders._trained_parameters): asked only of a function that takes an optimizer too.
    declared_modules: FrozenSet[str] = frozenset()
    # (`self.x`, "step"/"load_state_dict", where in the function's order)
    state_calls: List[Tuple[str, str, int]] = field(default_factory=list)
    # The same on an optimizer it built and keeps on the object (`self.optimizer = SGD(...)` and then
    # `self.optimizer.step()` in its loop): replayed on the holder its caller gets (`self_holders`).
    kept_states: List[Tuple[str, str, int]] = field(default_factory=list)
    # The same on an argument: `load_checkpoint(path, model, optimizer)` loading the optimizer's state.
    argument_state_calls: List[ArgumentState] = field(default_factory=list)
    # A class's constructor, in the order its `__init__` runs them: the holders it builds (on arguments
    # or on the new object) and the placements of the new object itself.
    constructed: List[Constructed] = field(default_factory=list)
    regroups: bool = False  # calls `add_param_group` on an optimizer: it re-binds one it is given
    moves_state: Tuple[Origin, ...] = ()  # the arguments (or `self.*`) whose optimizer state it moves
    # Where it hands an argument to a call that takes the model and the optimizer together
    # (`amp.initialize(model, optimizer)`), with the conditions on the way: a caller that rebinds its
    # optimizer from this call leaves the order to it on those paths only.
    handled: List[Handling] = field(default_factory=list)
    # The parameters its `if` tests read: a call that decides one gets the summary of a walk in that
    # context (`in_context`, given by whoever made the summary), not only its events filtered.
    tests: FrozenSet[str] = frozenset()
    kwargs_keys: Tuple[str, ...] = ()  # the constant keys it reads out of `**kwargs` (analysis/kwargs.py)
    # Every keyword it can read, when it takes `**kwargs` and reads them only by constant keys or hands
    # them to calls whose keywords are known too; None when any keyword may be read. A keyword outside
    # it is dropped (a holder built only there is never used).
    keywords: Optional[FrozenSet[str]] = None
    # A constructor's attributes that carry the arguments' parameters (`self.master_params = [p for p in
    # model.parameters()]`): an optimizer built on `mp.master_params` holds the model's.
    parameter_attributes: Dict[str, List[Part]] = field(default_factory=dict)
    # The parameters what it returns carries, as the caller's objects (`return [{"params": self.fc.parameters()}]`).
    returned_params: List[Part] = field(default_factory=list)
    arguments: Dict[str, Tuple[int, Optional[bool]]] = field(default_factory=dict)  # as `decidable`, rebound ones too
    in_context: Optional[Callable[[Dict[str, bool]], Optional["HelperSummary"]]] = None
    # Hands `self.optimizers` to a helper that regroups them (composer's `load_model_state` calling
    # `prepare_fsdp_module(self.model, self.optimizers)`): a call of this method keeps them in step.
    syncs_self_optimizers: bool = False
    # A method's holders kept on the object (`self.optimizer = SGD(self.model.parameters())` in a
    # base class's `setup()`).
    self_holders: List[KeptHolder] = field(default_factory=list)
    # A class's constructor: `self.model = model` in `__init__` (the attribute and the argument it
    # keeps), and its methods' summaries, so that `engine = Engine(model); engine.prepare()` follows.
    attributes: Dict[str, Part] = field(default_factory=dict)
    methods: Optional[Callable[[str], Optional["HelperSummary"]]] = None
    # Set for a summary of another module's function: where its statements are, for related locations.
    locate: Optional[Callable[[cst.CSTNode], Tuple[str, int, int]]] = None
    key: Optional[Tuple[str, str]] = None  # (path, name) of another module's function or class
    # The parameters a call's literal arguments decide (analysis/context.py): an event under
    # `if use_half:` is not replayed at a call that leaves `use_half=False`.
    decidable: Dict[str, Tuple[int, Optional[bool]]] = field(default_factory=dict)
    # A function that returns a tuple (`return optimizer, scheduler`): what each position is, or None.
    fields: Tuple[Optional[ReturnedField], ...] = ()
    # The objects of summarised classes it returns, one per class it may build (on any path).
    returned_instances: Tuple[ReturnedInstance, ...] = ()
    # The moves and casts of a new object it returns (`return Model(**config).to(device)`): the object a
    # call gets is placed so at the call (device values as the arguments its callers fill in).
    returned_placements: Tuple[PlacementEvent, ...] = ()

    def attributes_read(self) -> Tuple[Part, ...]:
        """What a getter or property returns of its object: the attribute (`return self.model`), or each
        of a list of them (`return [self.policy, self.qf]`)."""
        return (self.returns_self,) if self.returns_self is not None else self.returns_self_members


def split_arguments(args) -> Tuple[List[Value], Dict[str, Value]]:
    """A call's (argument node, value) pairs as what it passes by position and by keyword (a `*`/`**`
    spread is neither)."""
    positional = [value for arg, value in args if arg.keyword is None and not arg.star]
    keywords = {arg.keyword.value: value for arg, value in args if arg.keyword is not None}
    return positional, keywords


def argument_of(origin: Origin, positional: List[Value], keywords: Dict[str, Value]) -> Optional[Value]:
    """What a call hands the parameter an origin names: by position, else by keyword."""
    return positional[origin.index] if origin.index < len(positional) else keywords.get(origin.key)
