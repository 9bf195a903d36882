"""Walks one scope's statements along every path and records holder, placement and state events.

The walker follows values, not types: a name becomes a model handle when parameters are taken from
it, aliases (`model = model.to(d)`, `ddp = DDP(model)`, `self.model = model`) share one object id,
and rebinding to a new object gives a new id, which ends the old handle.

It is a path-aware dataflow: each arm of an `if`, `try`, `match` or loop starts from a copy of the
names bound before it, and where the arms meet a name holds the *set* of objects it may hold on any
path that gets there (may-alias); a fact such as "this device is the CPU" holds only where every
path makes it. `return`, `raise`, `break` and `continue` end their path: the events after a branch
record which arms had ended (`Site.dead`), and the names bound in an ended arm do not reach the merge.
"""
from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from itertools import count
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from .. import catalog as cat
from .kwargs import key_of, kwargs_keys
from .context import NONE_TEST, Decidable, call_truths, decidable_parameters, literal_truth, never_runs, truth_of
from .events import (
    ANY_SUBMODULE,
    DiscardedWrapperEvent,
    Elsewhere,
    ForwardEvent,
    Guard,
    Handle,
    HolderEvent,
    ManagedEvent,
    PlacementEvent,
    RebindEvent,
    ScopeEvents,
    Site,
    StateEvent,
    TRY_BODY,
)
from .blocks import node_fields, suite_body, suites
from .names import code_text, ImportTable, dotted_name, operands, target_elements
from .uses import OptimizerUses, OPTIMIZER_KEYWORD, use_key

# Among several arguments of an optimizer factory, these name the module; the others are settings.
_MODEL_NAME = re.compile(r"model|net|module|encoder|decoder|backbone", re.IGNORECASE)
# An unknown call whose name says it collects parameters (`get_param_groups(model, wd)`).
_PARAM_COLLECTOR = re.compile(r"param|group|decay", re.IGNORECASE)
# An argument named like an optimizer: a call handed one uses it rather than builds one.
_OPTIMIZER_ARGUMENT = re.compile(r"(?:^|[._])(?:optim|optimizer|optimizers|opt)$", re.IGNORECASE)

Env = Dict[str, "Binding"]
Arm = Tuple[int, int]


@dataclass(frozen=True)
class Origin:
    """Where an object id came from, so a helper's events can be replayed at its call sites."""

    kind: str  # "param", "self" or "local"
    key: str
    index: int = -1


@dataclass
class HelperSummary:
    """What calling a same-module function does to its arguments (and `self.*`), seen from outside."""

    name: str
    placements: List[Tuple[Origin, Tuple[str, ...], PlacementEvent]] = field(default_factory=list)
    holder: Optional[Tuple[str, str, List[Tuple[Origin, Tuple[str, ...]]], bool]] = None
    returns_param: Optional[int] = None
    param_names: Tuple[str, ...] = ()
    state_calls: List[Tuple[str, str]] = field(default_factory=list)  # (`self.x`, "step"/"load_state_dict")
    # The same on an argument: `load_checkpoint(path, model, optimizer)` loading the optimizer's state.
    argument_state_calls: List[Tuple[Origin, str, int]] = field(default_factory=list)  # ..., where in its order
    # A class's constructor, in the order its `__init__` runs them: the holders it builds (on arguments
    # or on the new object) and the placements of the new object itself.
    constructed: List[Tuple[object, str, List[Tuple[Origin, Tuple[str, ...]]], bool, str]] = field(default_factory=list)
    regroups: bool = False  # calls `add_param_group` on an optimizer: it re-binds one it is given
    # Where it hands an argument to a call that takes the model and the optimizer together
    # (`amp.initialize(model, optimizer)`), with the conditions on the way: a caller that rebinds its
    # optimizer from this call leaves the order to it on those paths only.
    handled: List[Tuple[Origin, Site]] = field(default_factory=list)
    # The parameters its `if` tests read: a call that decides one gets the summary of a walk in that
    # context (`in_context`, given by whoever made the summary), not only its events filtered.
    tests: FrozenSet[str] = frozenset()
    kwargs_keys: Tuple[str, ...] = ()  # the constant keys it reads out of `**kwargs` (analysis/kwargs.py)
    # A constructor's attributes that carry the arguments' parameters (`self.master_params = [p for p in
    # model.parameters()]`): an optimizer built on `mp.master_params` holds the model's.
    parameter_attributes: Dict[str, List[Tuple[Origin, Tuple[str, ...]]]] = field(default_factory=dict)
    # The parameters what it returns carries, as the caller's objects (`return [{"params": self.fc.parameters()}]`).
    returned_params: List[Tuple[Origin, Tuple[str, ...]]] = field(default_factory=list)
    arguments: Dict[str, Tuple[int, Optional[bool]]] = field(default_factory=dict)  # as `decidable`, rebound ones too
    in_context: Optional[Callable[[Dict[str, bool]], Optional["HelperSummary"]]] = None
    # Hands `self.optimizers` to a helper that regroups them (composer's `load_model_state` calling
    # `prepare_fsdp_module(self.model, self.optimizers)`): a call of this method keeps them in step.
    syncs_self_optimizers: bool = False
    # A method's holders kept on the object (`self.optimizer = SGD(self.model.parameters())` in a
    # base class's `setup()`): (kind, label, models, bucket view, `self.optimizer`).
    self_holders: List[Tuple[str, str, List[Tuple[Origin, Tuple[str, ...]]], bool, str]] = field(default_factory=list)
    # A class's constructor: `self.model = model` in `__init__` (the attribute and the argument it
    # keeps), and its methods' summaries, so that `engine = Engine(model); engine.prepare()` follows.
    attributes: Dict[str, Tuple[Origin, Tuple[str, ...]]] = field(default_factory=dict)
    methods: Optional[Callable[[str], Optional["HelperSummary"]]] = None
    # Set for a summary of another module's function: where its statements are, for related locations.
    locate: Optional[Callable[[cst.CSTNode], Tuple[str, int, int]]] = None
    key: Optional[Tuple[str, str]] = None  # (path, name) of another module's function or class
    # The parameters a call's literal arguments decide (analysis/context.py): an event under
    # `if use_half:` is not replayed at a call that leaves `use_half=False`.
    decidable: Dict[str, Tuple[int, Optional[bool]]] = field(default_factory=dict)
    # A function that returns a tuple (`return optimizer, scheduler`): per position, ("holder", (kind,
    # label, models, bucket view)) or ("param", the index of the argument handed back), or None.
    fields: Tuple[Optional[Tuple[str, object]], ...] = ()


Callables = FrozenSet[Tuple[Optional[str], str]]
NONE_HANDED = "none"  # a call hands the parameter no optimizer (see ScopeWalker._handed)

# An object built from a summarised class: (its method summaries, what its attributes hold, the holders
# handed to its constructor, where its class's statements are when another module defines it)
Instance = Tuple[Callable[[str], Optional["HelperSummary"]], Dict[str, Tuple["Handle", ...]], Tuple[HolderEvent, ...],
                 Optional[Callable[[cst.CSTNode], Tuple[str, int, int]]], str,  # ..., its class's name,
                 Dict[str, FrozenSet["Handle"]]]  # and the attributes that carry the arguments' parameters


@dataclass(frozen=True)
class Binding:
    """What one name may hold where the walk is. Never changed in place: an arm's copy of the
    environment shares bindings with the others until it rebinds them."""

    handle: Handle
    params: FrozenSet[Handle] = frozenset()
    holders: Tuple[HolderEvent, ...] = ()
    xla: bool = False
    cpu: bool = False  # `device = torch.device("cpu")` on every path: moving there is a no-op
    alts: FrozenSet[Handle] = frozenset()  # the other objects it holds on other paths
    members: FrozenSet[Handle] = frozenset()  # the modules a list, tuple or ModuleList of it holds
    element: bool = False  # bound by a loop or comprehension to one of a container's modules
    makes: Optional[str] = None  # holds an optimizer class or partial: calling it builds a holder
    callables: Callables = frozenset()  # the classes or functions of this file it may be (see Value)
    device_of: FrozenSet[int] = frozenset()  # see Value

    @property
    def holder(self) -> Optional[HolderEvent]:
        return self.holders[0] if self.holders else None


@dataclass
class Value:
    handle: Optional[Handle] = None
    params: FrozenSet[Handle] = frozenset()
    holders: Tuple[HolderEvent, ...] = ()
    xla: bool = False
    copy_of: Optional[Handle] = None  # `copy.deepcopy(x)`, or `x.to(device)` of a tensor `x`
    copy_label: str = "copy.deepcopy()"
    copy_operation: str = ""  # cat.TENSOR_COPY for a tensor's `.to()`
    leaf: bool = False  # a tensor made to be trained on its own (`torch.zeros(1, requires_grad=True)`)
    # Placements applied to a new object before it has a name (`model = Net().to(device)`).
    pending: Tuple[PlacementEvent, ...] = ()
    alts: FrozenSet[Handle] = frozenset()
    members: FrozenSet[Handle] = frozenset()
    contains: bool = False  # a holder that keeps `handle` as a submodule (`EMA(model)`)
    element: bool = False  # one of a container's modules, bound by a loop or comprehension
    makes: Optional[str] = None  # a callable that builds a holder of this kind (`getattr(torch.optim, name)`)
    # A tuple or list of known length: what each position holds (`return optimizer, scheduler`), so that
    # `opt, sched = build(model)` gives each name its own object.
    fields: Tuple["Value", ...] = ()
    items: Tuple["Value", ...] = ()  # iterated, it gives tuples with these fields (`zip(a, b)`)
    # A class or function of this file as a value (`placer_class=DevicePlacer`, a registry dict
    # `{"gpu": GpuPlacer, "cpu": CpuPlacer}`): (the constant key it sits under, or None; its name).
    # Calling the value calls each one it may be.
    callables: Callables = frozenset()
    # A device value: the device where these objects' tensors are (`next(model.parameters()).device`,
    # a batch sent there, its `.device`). One object: a move of that object there moves nothing.
    device_of: FrozenSet[int] = frozenset()

    @property
    def holder(self) -> Optional[HolderEvent]:
        return self.holders[0] if self.holders else None

    @property
    def handles(self) -> Tuple[Handle, ...]:
        """Every object it may be, the primary one first."""
        if self.handle is None:
            return ()
        return (self.handle,) + tuple(sorted(self.alts - {self.handle}, key=_handle_key))


_EMPTY = Value()


@dataclass
class _Loop:
    """What `break` and `continue` leave behind inside one loop: their environments and ended arms."""

    exits: List[Env] = field(default_factory=list)
    ended: set = field(default_factory=set)


class ScopeWalker:
    """Produces the events of one scope. One instance per scope; `ids` is shared per file."""

    # `**kwargs` (analysis/kwargs.py): its name, the keys read out of it, and what each holds; set by
    # `bind_parameters` (`_bind_kwargs`), read only once a name is set
    _kwargs_name: Optional[str] = None
    kwargs_keys: Tuple[str, ...] = ()
    _kwargs: Dict[str, Binding] = {}

    def __init__(
        self,
        name: str,
        imports: ImportTable,
        catalog: cat.Catalog,
        helpers: Dict[str, HelperSummary],
        method_helpers: Dict[str, HelperSummary],
        ids: "count[int]",
        overwrite_flag: bool,
        constructors=None,
        project=None,
        path: str = "",
    ) -> None:
        self.scope = ScopeEvents(name)
        self.project = project  # the project index: summaries of other modules' functions and classes
        self.path = path
        self.imports = imports
        self.catalog = catalog
        self.helpers = helpers
        self.method_helpers = method_helpers
        self.constructors = constructors if constructors is not None else {}
        self.ids = ids
        self.overwrite_flag = overwrite_flag
        self.env: Env = {}
        self.origins: Dict[int, Origin] = {}
        self.returns: List[Value] = []
        self.state_calls: List[Tuple[str, str]] = []
        self.argument_state_calls: List[Tuple[Origin, str, int]] = []
        # Objects built here from a summarised class: the new object's id -> (its methods, what its
        # attributes hold: `self.model` -> the caller's model, the holders handed to its constructor)
        self._instances: Dict[int, Instance] = {}
        self._built: Dict[int, Instance] = {}  # by the constructor call, until a name takes the object
        self._args_from = 0  # where the current call's argument events start in scope.events
        self.order = count()
        self.self_calls: set = set()  # `self.method()` calls seen: the methods `__init__` runs itself
        self.regroups = False  # an `add_param_group` call was seen (see HelperSummary.regroups)
        self.handled: List[Tuple[Origin, Site]] = []  # see HelperSummary.handled
        self.tested: set = set()  # the names `if` tests read (see HelperSummary.tests)
        self.context: Dict[str, bool] = {}  # what the call this summary is for decides (analysis/context.py)
        self._rebound: set = set()
        self.arguments: Decidable = {}  # every parameter, as a call may decide it (see HelperSummary.arguments)
        self.decidable: Decidable = {}  # see HelperSummary.decidable
        self.arrival_key: Optional[Tuple[str, str]] = None  # this function's key for its callers, when reported
        self.syncs_self_optimizers = False  # see HelperSummary.syncs_self_optimizers
        self._arrivals: Tuple[HolderEvent, ...] = ()  # optimizers this function was handed (callee side)
        # Calls of the project's functions and classes seen here: (their (path, name) key, the signatures
        # of their placements that had already been made here, before the call). The callee side asks
        # whether every caller placed the model before handing it over.
        self.calls: List[Tuple[Tuple[str, str], FrozenSet[Tuple[str, str, str]], Dict[str, object]]] = []
        self._free: Dict[str, Handle] = {}  # names never bound here: one object wherever they are read
        self._data: set = set()  # ids of objects made from literals (learning rates, name lists): never modules
        self._leaves: set = set()  # ids of tensors made to be trained on their own: `.to()` copies them
        self._chain: Tuple[cst.CSTNode, ...] = ()
        self._branches: Tuple[Arm, ...] = ()
        # Flags the function computes on its straight-line path (`use_ddp = ws > 1 and not args.fp16`):
        # a condition on them means their definition (see Guard.facts); any later assignment forgets one.
        self._definitions: Dict[str, cst.BaseExpression] = {}
        # Nested functions registered to run when an object runs: its name -> them, in order.
        self._handlers: Dict[str, List[cst.FunctionDef]] = {}
        self._running: set = set()  # handlers being walked now (a handler that runs its owner again)
        self._running_via: Optional[str] = None  # `trainer.run()` while its handlers are walked
        # Methods called on objects built here, in order: (class, earlier method, later method), shared
        # by the walkers of a file (see ScopeEvents.ordered).
        self.method_orders: set = set()
        self._instance_calls: Dict[int, List[str]] = {}
        # Module-level names bound to this file's classes or tables of them (`PLACERS = {...}`).
        self.module_tables: Dict[str, Callables] = {}
        self._guards: Tuple[Guard, ...] = ()
        self._loops: List[_Loop] = []
        self._alive = True
        self._ended_by_loop_exit = False
        self._dead: FrozenSet[Arm] = frozenset()
        self._silent = 0  # > 0 while a loop body is walked once only for its bindings
        self._synced = 0  # > 0 inside `with <re-points the optimizers>():`
        self._writes: List[set] = []  # names bound in each enclosing branch arm, innermost last
        self._in_test = 0  # > 0 while the condition of an `if` or `while` is evaluated
        self._current_node: cst.CSTNode = cst.Pass()
        # The file's use keys of what it uses as optimizers (analysis/uses.py), computed on first need.
        self.optimizer_uses: Optional[Callable[[], OptimizerUses]] = None

    # ----- entry points -------------------------------------------------------------------------
    def bind_parameters(self, function: cst.FunctionDef, is_method: bool,
                        arrival: Optional[Tuple[str, Tuple[str, str]]] = None) -> Tuple[str, ...]:
        """Give each parameter its own object; a method's `self` is not counted among the arguments.

        `arrival` (the function's label and its (path, name) key) asks for the callee side: an
        optimizer parameter handed in with a model parameter is a holder of that model, built before
        the function runs (only for the scopes whose findings are reported, never for summaries)."""
        names = []
        params = list(function.params.posonly_params + function.params.params)
        if is_method and params:
            params = params[1:]
        bound = []
        for index, param in enumerate(params + list(function.params.kwonly_params)):
            if index >= len(params):
                index = 1 << 30  # keyword-only: reachable by name, never by position
            name = param.name.value
            names.append(name)
            handle = Handle(next(self.ids), (), name)
            self.origins[handle.obj] = Origin("param", name, index)
            default = dotted_name(param.default) if param.default is not None else None
            # `placer_class=DevicePlacer`: the class unless a caller passes another
            self._assign(name, Binding(handle, callables=self._defined_callables(default) if default else frozenset()))
            bound.append((param, handle))
        pseudo = self._bind_kwargs(function)
        if arrival is not None:
            self.arrival_key = arrival[1]
            self._optimizers_arrive(function, bound + pseudo, *arrival, is_method=is_method)
            for param, handle in pseudo:
                # the key's holder lives under the key, not under a local name that it happens to spell
                key = param.name.value
                arrived = self.env.get(key)
                if arrived is not None and arrived.handle is handle:
                    self._kwargs[key] = arrived
                    self.env.pop(key)
        rebound: set = set()
        _collect_bound(function.body, rebound)
        self.decidable = decidable_parameters(function, is_method, rebound)
        self.arguments = decidable_parameters(function, is_method, ())
        self._rebound = set()
        return tuple(names)

    def _bind_kwargs(self, function: cst.FunctionDef) -> List[Tuple[cst.Param, Handle]]:
        """Each constant key the body reads out of `**kwargs` is an argument of that name (see
        analysis/kwargs.py); those neither called nor spread may be an optimizer that arrives built."""
        self._kwargs, self.kwargs_keys, self._kwargs_name = {}, (), None
        star = function.params.star_kwarg
        if not isinstance(star, cst.Param):
            return []
        self._kwargs_name = star.name.value
        whole = Handle(next(self.ids), (), self._kwargs_name)
        self.origins[whole.obj] = Origin("param", self._kwargs_name, 1 << 30)
        self._assign(self._kwargs_name, Binding(whole))
        pseudo = []
        uses = kwargs_keys(function, self._kwargs_name)
        self.kwargs_keys = tuple(uses)
        for key, use in uses.items():
            handle = Handle(next(self.ids), (), f'{self._kwargs_name}["{key}"]')
            self.origins[handle.obj] = Origin("param", key, 1 << 30)
            self._kwargs[key] = Binding(handle)
            if not (use.called or use.spread) or not cat.receives_optimizer(key):
                pseudo.append((cst.Param(cst.Name(key)), handle))  # a called module is a forward pass
        return pseudo

    def _optimizers_arrive(self, function: cst.FunctionDef, bound, label: str, key: Tuple[str, str],
                           is_method: bool = False) -> None:
        optimizers, models = [], []
        annotated_only: List[Handle] = []  # modules by their annotation, not named as a model (`loss_fn`)
        names: List[Tuple[FrozenSet[str], FrozenSet[str]]] = []  # walked only when a parameter needs it
        for param, handle in bound:
            annotation = _plain_text(param.annotation.annotation) if param.annotation is not None else ""
            string_default = isinstance(param.default, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
            # an annotation says what the parameter is; the file's uses speak only for one without
            if cat.receives_optimizer(param.name.value, annotation, string_default) or (
                    not annotation and self._used_as_optimizer_alone(param.name.value)):
                if not names:
                    names.append(_called_and_kept_names(function))
                called, kept = names[0]
                if param.name.value in called:
                    continue  # the body calls it: a factory (`optimizer(self.model.parameters())`), built later
                if not annotation and param.name.value not in kept and not self._named_optimizer_is_used(param.name.value):
                    continue  # only its name says optimizer, nothing in the file uses it as one, nor keeps it
                optimizers.append((param.name.value, handle))
            elif cat.receives_model(param.name.value, annotation):
                models.append(handle)
                if annotation and not cat.receives_model(param.name.value):
                    annotated_only.append(handle)
        # `q_func1_optimizer` beside a `q_func1` parameter: the optimizer's name names the module it
        # holds, though nothing else says that parameter is a module
        by_name = {param.name.value.lower(): handle for param, handle in bound}
        for name, _ in optimizers:
            named = by_name.get(_qualifier(name))
            if named is not None and named not in models and all(named is not h for _, h in optimizers):
                models.append(named)
        if optimizers and not models and is_method:
            # `def train(self, optimizer, loader)` of an object that keeps its model (`self.model`): the
            # optimizer handed to the object's method trains the modules the object keeps
            models = self._kept_modules()
        if not optimizers or not models:
            return
        for name, handle in optimizers:
            # `sharded_optimizer` with `org_model` and `sharded_model`, `optimizer_g` with `net_g`: the
            # model its name pairs it with; any of them when none pairs
            own = _qualifier(name)
            paired = [m for m in models if own and _qualifier(m.text) == own]
            if not paired and annotated_only and len(annotated_only) < len(models):
                # `train(model: nn.Module, loss_fn: nn.Module, optimizer: Optimizer)`: the module named
                # as the model is what the optimizer trains, not the loss annotated as a module too
                paired = [m for m in models if all(m is not a for a in annotated_only)]
            event = HolderEvent(Site(next(self.order), function, (function,)), cat.LAZY, "parameter",
                                frozenset(paired or models), var=name, arrives=label, arrives_key=key)
            self._emit(event)
            self._assign(name, Binding(handle, holders=(event,)))
            self._arrivals += (event,)

    def _kept_modules(self) -> List[Handle]:
        """The modules this object keeps under a model's name (`self.model`, `self.model_S`), as its
        constructor and earlier methods left them."""
        return [binding.handle for key, binding in self.env.items()
                if _is_self_attribute(key) and cat.receives_model(key[5:].lstrip("_")) and not binding.holders
                and binding.handle.obj not in self._data and binding.handle.obj not in self._leaves]

    def _used_as_optimizer_alone(self, name: str) -> bool:
        """Types from use: a parameter of any name is an optimizer when the file uses it as nothing else
        is used (`updater.zero_grad()` and `updater.step()`; analysis/uses.py)."""
        return self.optimizer_uses is not None and use_key(name) in self.optimizer_uses().alone

    def _named_optimizer_is_used(self, name: str) -> bool:
        """Types from use, on the callee side: a parameter known as an optimizer by its name alone is
        one when the file uses that name (or the attribute it is kept in) as an optimizer."""
        return self.optimizer_uses is None or use_key(name) in self.optimizer_uses().names

    def walk_body(self, body: Sequence[cst.BaseStatement], root: Tuple[cst.CSTNode, ...] = ()) -> None:
        saved = self._chain
        self._chain = root
        self._alive, self._dead = True, frozenset()
        self._walk_block(body)
        self._chain = saved

    def forget_locals(self) -> None:
        """A class's methods share `self.*` but not their local names."""
        self.env = {key: value for key, value in self.env.items() if key == "self" or key.startswith("self.")}
        self._definitions = {}

    # ----- statements ---------------------------------------------------------------------------
    def _walk_block(self, body: Sequence[cst.BaseStatement]) -> None:
        for statement in body:
            if not self._alive:
                return  # unreachable: the path ended above
            self._walk_statement(statement)

    def _enter(self, statement: cst.CSTNode) -> Tuple[cst.CSTNode, ...]:
        saved = self._chain
        self._chain = saved + (statement,)
        return saved

    def _walk_statement(self, statement: cst.BaseStatement) -> None:
        saved = self._enter(statement)
        try:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if self._alive:
                        self._walk_small(small)
            elif isinstance(statement, cst.If):
                self._walk_if(statement)
            elif isinstance(statement, (cst.For, cst.While)):
                self._walk_loop(statement)
            elif isinstance(statement, cst.With):
                syncing = False
                for item in statement.items:
                    value = self._eval(item.item)
                    if item.asname is not None:
                        self._bind_target(item.asname.name, value)
                    if isinstance(item.item, cst.Call) and cat.syncs_optimizer(_callee_name(item.item.func)):
                        syncing = True
                        held = self._held_holders()
                        if held:
                            self._emit(ManagedEvent(self._site(item.item), held, f"{_callee_name(item.item.func)}()"))
                self._synced += syncing
                try:
                    self._walk_suite(statement.body)
                finally:
                    self._synced -= syncing
            elif isinstance(statement, cst.Try):
                self._walk_try(statement)
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                # their own scopes; the name now refers to something new. A function registered as a
                # handler (`@trainer.on(...)`) runs when its object runs (see _run_handlers).
                owner = _handler_owner(statement) if isinstance(statement, cst.FunctionDef) else None
                if owner is not None:
                    self._handlers.setdefault(owner, []).append(statement)
            elif isinstance(statement, cst.Match):
                self._walk_match(statement)
            else:
                body = getattr(statement, "body", None)
                if isinstance(body, cst.BaseSuite):
                    self._walk_suite(body)
        finally:
            self._chain = saved

    # ----- paths --------------------------------------------------------------------------------
    def _walk_arms(self, node: cst.CSTNode, arms: Sequence[Tuple[Tuple[Guard, ...], object]], start: Env,
                   fall_through: bool) -> None:
        """Walk each arm from `start`; afterwards the names hold what they may hold on every path that
        got through an arm (or past them all, with `fall_through`)."""
        outs: List[Env] = [start] if fall_through else []
        written: set = set()
        for arm, (guards, walk) in enumerate(arms):
            self.env = dict(start)
            self._alive = True
            self._ended_by_loop_exit = False
            self._writes.append(set())
            try:
                self._with_branch(node, arm, guards, walk)
            finally:
                written |= self._writes.pop()
            if self._alive:
                outs.append(self.env)
            else:
                self._end_arm((id(node), arm))
        if self._writes:
            self._writes[-1].update(written)
        self._alive = bool(outs)
        self._ended_by_loop_exit = False
        self.env = _merge(outs, written) if outs else start
        if outs and not fall_through:
            self._note_rebuilt_everywhere(node, start)

    def _note_rebuilt_everywhere(self, node: cst.CSTNode, start: Env) -> None:
        """A holder that every arm rebinds away is superseded here, on every path (each arm's own
        rebinding ends it only on that arm's path)."""
        for key, binding in start.items():
            if not binding.holders:
                continue
            now = self.env.get(key)
            for holder in binding.holders:
                if now is None or all(held is not holder for held in now.holders):
                    self._emit(RebindEvent(self._site(node), holder, None))

    def _end_arm(self, arm: Arm) -> None:
        self._dead = self._dead | {arm}
        if self._ended_by_loop_exit and self._loops:
            self._loops[-1].ended.add(arm)

    def _walk_if(self, statement: cst.If) -> None:
        self.tested.update(_dotted_names(statement.test))
        decided = truth_of(statement.test, {k: v for k, v in self.context.items()
                                            if k.removesuffix(NONE_TEST) not in self._rebound}) if self.context else None
        if decided is not None:
            # a summary for a call that decides this test: only the arm that runs, as straight code
            self._eval_test(statement.test)
            if decided:
                self._walk_suite(statement.body)
            elif isinstance(statement.orelse, cst.If):
                self._walk_if(statement.orelse)
            elif isinstance(statement.orelse, cst.Else):
                self._walk_suite(statement.orelse.body)
            return
        self._eval_test(statement.test)
        if self._arrivals and statement.orelse is None and _ends_in_raise(statement.body):
            self._note_refusal(statement.test)
        test = statement.test
        arms: List[Tuple[Tuple[Guard, ...], object]] = [
            ((Guard(test, True, self._facts(test, True)),), lambda: self._walk_suite(statement.body))
        ]
        orelse = statement.orelse
        otherwise = (Guard(test, False, self._facts(test, False)),)
        if isinstance(orelse, cst.If):
            # An `elif` belongs to the outer `if` statement: it adds no statement to the chain.
            arms.append((otherwise, lambda: self._walk_if(orelse)))
        elif isinstance(orelse, cst.Else):
            arms.append((otherwise, lambda: self._walk_suite(orelse.body)))
        self._walk_arms(statement, arms, self.env, fall_through=orelse is None)

    def _facts(self, test: cst.BaseExpression, truth: bool, depth: int = 0) -> FrozenSet[Tuple[str, bool]]:
        """What `test` being `truth` says of names: `a and not b` true gives a and not b; `a or b` false
        gives not a and not b; a computed flag stands for its definition."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._facts(test.expression, not truth, depth)
        if isinstance(test, cst.BooleanOperation):
            splits = isinstance(test.operator, cst.And) if truth else isinstance(test.operator, cst.Or)
            if not splits:
                return frozenset()
            return self._facts(test.left, truth, depth) | self._facts(test.right, truth, depth)
        name = dotted_name(test)
        if name is None:
            return frozenset()
        definition = self._definitions.get(name)
        if definition is not None and depth < 3:
            return self._facts(definition, truth, depth + 1)
        return frozenset({(name, truth)})

    def _only_when_absent(self, key: str, holder: HolderEvent) -> bool:
        """Whether this path runs only when the handed optimizer is missing: under `if key is None:`,
        `if not key:` or the `else` of `if key is not None:` / `if key:`."""
        names = {key, holder.var}
        for guard in self._guards:
            for conjunct in operands(guard.test, cst.And) if guard.holds else (guard.test,):
                absent, subject = _absence_test(conjunct)
                if subject in names and absent == guard.holds:
                    return True
        return False

    def _note_refusal(self, test: cst.BaseExpression) -> None:
        """`if (A or B) and optimizer is not None: raise`: wherever the optimizer arrived, A and B are
        false. Only that shape: one condition on the optimizer and one disjunction of plain flags."""
        about, flags = [], []
        for conjunct in operands(test, cst.And):
            names = set(_dotted_names(conjunct))
            arrived = [a for a in self._arrivals
                       if a.var in names or any(h is a for n in names if n in self.env for h in self.env[n].holders)]
            if arrived:
                about.extend(arrived)
            else:
                flags.append(conjunct)
        if not about or len(flags) != 1:
            return
        disjuncts = [dotted_name(d) for d in operands(flags[0], cst.Or)]
        if all(disjuncts):
            for holder in about:
                holder.refused_with = holder.refused_with | frozenset(disjuncts)

    def _eval_test(self, test: cst.BaseExpression) -> None:
        """A condition: a call in it answers a question (`if self._swappable_optimizer(i):`), it does
        not build an optimizer, whatever its name says."""
        self._in_test += 1
        try:
            self._eval(test)
        finally:
            self._in_test -= 1

    def _walk_match(self, statement: cst.Match) -> None:
        self._eval(statement.subject)
        arms = [((), lambda c=case: self._walk_suite(c.body)) for case in statement.cases]
        exhaustive = any(
            isinstance(case.pattern, cst.MatchAs) and case.pattern.pattern is None and case.guard is None
            for case in statement.cases
        )
        self._walk_arms(statement, arms, self.env, fall_through=not exhaustive)

    def _walk_try(self, statement: cst.Try) -> None:
        before = self.env
        self.env = dict(before)
        self._with_branch(statement, TRY_BODY, (), lambda: self._walk_suite(statement.body))
        body_alive, after_body = self._alive, self.env
        if statement.orelse is not None and body_alive:
            self._walk_suite(statement.orelse.body)
        outs = [(self._alive, self.env)]
        # A handler may start anywhere in the body: from what was bound before it or at its end.
        start = _merge([before, after_body]) if body_alive else before
        for arm, handler in enumerate(statement.handlers, start=1):
            self.env = dict(start)
            self._alive = True
            self._with_branch(statement, arm, (), lambda h=handler: self._walk_suite(h.body))
            if not self._alive:
                self._end_arm((id(statement), arm))
            outs.append((self._alive, self.env))
        live = [env for alive, env in outs if alive]
        self._alive = bool(live)
        self.env = _merge(live) if live else start
        if statement.finalbody is not None:
            alive, self._alive = self._alive, True
            self._walk_suite(statement.finalbody.body)
            self._alive = alive and self._alive

    def _walk_loop(self, statement) -> None:
        """Loops run to a fixed point of one extra pass: the body is first walked silently, so that on
        the recorded pass a name holds what the previous iteration may have left in it."""
        before = self.env
        self.env = dict(before)
        # The outermost loop's extra pass covers the inner ones; it is needed only where the body rebinds
        # a name bound before the loop (a name first bound inside cannot reach the head from before).
        if self._silent == 0 and not self._loops and not _rebound_in(statement).isdisjoint(before):
            self._silent += 1
            try:
                self._loop_pass(statement)
                head = _merge([before] + self._loop_exits(before))
            finally:
                self._silent -= 1
            self.env = dict(head)
        else:
            head = before
        alive_before = self._alive
        self._with_branch(statement, 0, (), lambda: self._loop_pass(statement))
        returned = not self._alive and not self._loops[-1].exits  # every pass through the body returns
        self.env = _merge([head] + self._loop_exits(head))
        if returned:
            self._dead = self._dead | {(id(statement), 0)}  # nothing after the loop follows the body
        self._alive = alive_before
        if statement.orelse is not None:
            self._walk_suite(statement.orelse.body)

    def _loop_pass(self, statement) -> None:
        self._loops.append(_Loop())
        self._alive = True
        if isinstance(statement, cst.For):
            source = self._eval(statement.iter)
            self._bind_target(statement.target, _element_of(source))
        else:
            self._eval_test(statement.test)
        self._walk_suite(statement.body)

    def _loop_exits(self, head: Env) -> List[Env]:
        loop = self._loops.pop()
        self._dead = self._dead - loop.ended  # after the loop, the path of a `break` goes on
        exits = list(loop.exits)
        if self._alive:
            exits.append(self.env)
        return exits

    def _with_branch(self, node: cst.CSTNode, arm: int, guards: Tuple[Guard, ...], walk) -> None:
        saved = (self._branches, self._guards)
        self._branches = self._branches + ((id(node), arm),)
        self._guards = self._guards + tuple(guards)
        try:
            walk()
        finally:
            self._branches, self._guards = saved

    def _walk_suite(self, suite: cst.BaseSuite) -> None:
        if isinstance(suite, cst.IndentedBlock):
            self._walk_block(suite.body)
        elif isinstance(suite, cst.SimpleStatementSuite):
            for small in suite.body:
                if self._alive:
                    self._walk_small(small)

    def _walk_small(self, small: cst.BaseSmallStatement) -> None:
        self._current_node = small
        if isinstance(small, cst.Assign):
            value = self._eval(small.value)
            for target in small.targets:
                self._bind_target(target.target, value, small.value)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                self._bind_target(small.target, self._eval(small.value), small.value)
        elif isinstance(small, cst.AugAssign):
            value = self._eval(small.value)
            key = self._key_of(small.target)
            if key is not None and key in self.env and (value.params or value.members):
                binding = self.env[key]
                self._assign(key, dataclasses.replace(
                    binding, params=binding.params | value.params, members=binding.members | value.members
                ))
        elif isinstance(small, cst.Expr):
            value = self._eval(small.value)
            self._check_discarded(small.value, value)
        elif isinstance(small, cst.Return):
            if small.value is not None:
                value = self._eval(small.value)
                if not self._silent:
                    self.returns.append(value)
                self._note_handed_back(small.value)
            self._alive = False
        elif isinstance(small, (cst.Import, cst.ImportFrom)):
            self.imports.add(small)
        elif isinstance(small, (cst.Raise, cst.Assert, cst.Del)):
            for child in _expression_children(small):
                self._eval(child)
            if isinstance(small, cst.Raise):
                self._alive = False
        elif isinstance(small, (cst.Break, cst.Continue)) and self._loops:
            self._loops[-1].exits.append(self.env)
            self._alive = False
            self._ended_by_loop_exit = True

    # ----- bindings -----------------------------------------------------------------------------
    def _assign(self, key: str, binding: Binding) -> None:
        self.env[key] = binding
        if self.context:
            self._rebound.add(key)  # from here the call's constant no longer decides a test of it
        self._definitions.pop(key, None)
        if self._writes:
            self._writes[-1].add(key)  # the merge after the enclosing branch looks only at these

    def _key_of(self, node: cst.BaseExpression) -> Optional[str]:
        dotted = dotted_name(node)
        if dotted is None:
            return None
        parts = dotted.split(".")
        if parts[0] == "self" and len(parts) == 2:
            return dotted
        return dotted if len(parts) == 1 else None

    def _split(self, dotted: str) -> Tuple[str, Tuple[str, ...]]:
        if "." not in dotted:
            return dotted, ()
        parts = dotted.split(".")
        if parts[0] == "self" and len(parts) >= 2:
            return "self." + parts[1], tuple(parts[2:])
        return parts[0], tuple(parts[1:])

    def _binding(self, key: str) -> Binding:
        binding = self.env.get(key)
        if binding is None:
            handle = self._free.get(key)
            if handle is None:
                handle = self._free[key] = Handle(next(self.ids), (), key)
                self.origins[handle.obj] = Origin("self" if key.startswith("self.") else "local", key)
            binding = self.env[key] = Binding(handle)
        return binding

    def _resolve(self, dotted: str) -> Handle:
        return self._resolve_all(dotted)[0]

    def _resolve_all(self, dotted: str) -> Tuple[Handle, ...]:
        """Every object `a.b.c` may be: one per object its root name may hold."""
        key, rest = self._split(dotted)
        binding = self._binding(key)
        sub = tuple(part for part in rest if part not in cat.TRANSPARENT_ATTRIBUTES) if rest else ()
        base = binding.handle
        if not binding.alts and not binding.element:
            kept = self._instances[base.obj][1].get(f"self.{sub[0]}") if sub and base.obj in self._instances else None
            if kept:
                # `trainer.net` of `trainer = Trainer(net, ...)` whose `__init__` keeps `self.net = net`;
                # it is also a part of the object that keeps it (a wrapper module's parameters are its
                # children's: an optimizer on `wrapper.parameters()` holds `wrapper.head`'s)
                return tuple(Handle(h.obj, h.sub + sub[1:], dotted) for h in kept) + (Handle(base.obj, base.sub + sub, dotted),)
            return (base if not sub and base.text == dotted else Handle(base.obj, base.sub + sub, dotted),)
        bases = (base,) + tuple(sorted(binding.alts - {base}, key=_handle_key))
        if binding.element:  # a loop's module is named as its container named it
            return tuple(Handle(base.obj, base.sub + sub, ".".join((base.text,) + rest)) for base in bases)
        return tuple(Handle(base.obj, base.sub + sub, dotted) for base in bases)

    def _bind_target(self, target: cst.BaseExpression, value: Value, value_node: Optional[cst.BaseExpression] = None) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = [element.value for element in target.elements]
            if isinstance(value_node, (cst.Tuple, cst.List)) and len(value_node.elements) == len(elements):
                values = [self._peek(element.value) for element in value_node.elements]
            elif len(value.fields) == len(elements):
                values = list(value.fields)  # a helper's tuple, a zip's item: position by position
            else:
                # `opt, sched = build(...)`: the first name gets the holder, each gets a new object;
                # `for name, sub in net.named_modules()`: each may be one of the modules.
                values = [
                    Value(params=value.params, holders=value.holders if i == 0 else (), members=value.members,
                          handle=value.handle if value.element else None, alts=value.alts if value.element else frozenset(),
                          element=value.element)
                    for i in range(len(elements))
                ]
            for element, element_value in zip(elements, values):
                self._bind_target(element, element_value)
            return
        if isinstance(target, cst.StarredElement):
            return
        if self._arrivals and _is_params_entry(target):
            # `group["params"] = [...]`: the function re-points a param group of an optimizer it was
            # handed (Lightning's PR #11886 fix), so it owns the order
            self._emit(ManagedEvent(self._site(value_node or target), self._arrivals, '["params"] ='))
        key = self._key_of(target)
        if key is None:
            self._assign_attribute(target, value_node)
            return
        old = self.env.get(key)
        if old is not None and isinstance(value_node, cst.Call) and key in _dotted_names(value_node):
            # `optimizer = Wrapper(optimizer)`, `type(optimizer)(...)` on what this function was handed: it
            # owns that object's order from here (see HelperSummary.handled)
            self._note_handled(self._site(value_node), (Value(handle=old.handle),))
        if value.copy_of is not None and old is not None and old.handle.obj == value.copy_of.obj:
            # `model = copy.deepcopy(model)`: the name now means a copy with new parameters.
            self._emit(PlacementEvent(self._site(value_node or target), value.copy_of, cat.REPLACE, value.copy_label,
                                      operation=value.copy_operation, rebinds_name=True))
        if old is not None and value.holders:
            for previous in old.holders:
                if previous.arrives and self._only_when_absent(key, previous):
                    continue  # `if self.optimizer is None: self.optimizer = ...`: the handed one is kept
                if all(previous is not new for new in value.holders):
                    self._emit(RebindEvent(self._site(value_node or target), previous, value.holder))
        alts: FrozenSet[Handle] = frozenset()
        if value.handle is not None and (not value.holders or value.contains):
            # One of a container's modules keeps its own name (`net.backbone`, not the loop's `part`).
            text = (lambda h: h.text) if value.element else (lambda h: key)
            handle = Handle(value.handle.obj, value.handle.sub, text(value.handle))
            alts = frozenset(Handle(h.obj, h.sub, text(h)) for h in value.alts)
        else:
            handle = Handle(next(self.ids), (), key)
            self.origins[handle.obj] = Origin("local", key)
            if _is_data(value_node, value):
                self._data.add(handle.obj)
            if value.leaf:
                self._leaves.add(handle.obj)
        for event in value.pending:
            self._emit(dataclasses.replace(event, handle=Handle(handle.obj, (), key)))
        if isinstance(value_node, cst.Call) and id(value_node) in self._built:
            self._instances[handle.obj] = self._built.pop(id(value_node))
        for holder in value.holders:
            if holder.var is None:
                holder.var = f"{key}.{holder.attribute}" if holder.attribute else key
        self._assign(key, Binding(handle, value.params, value.holders, value.xla, _is_cpu_device(value_node), alts,
                                  value.members, value.element and value.handle is not None, value.makes,
                                  value.callables, value.device_of))
        if (not self._branches and not self._loops and "." not in key
                and isinstance(value_node, (cst.BooleanOperation, cst.UnaryOperation))):
            self._definitions[key] = value_node

    def _peek(self, node: cst.BaseExpression) -> Value:
        """The value of one element of a tuple already evaluated as a whole (no new events)."""
        dotted = dotted_name(node)
        if dotted is None:
            return _EMPTY
        handles = self._resolve_all(dotted)
        binding = self.env.get(dotted)
        if binding is not None:
            return _value_of(binding, handles)
        return Value(handles[0], alts=frozenset(handles[1:]))

    def _assign_attribute(self, target: cst.BaseExpression, value_node: Optional[cst.BaseExpression]) -> None:
        dotted = dotted_name(target)
        if dotted is None or not isinstance(value_node, cst.Call):
            return
        callee = dotted_name(value_node.func)
        if callee is None:
            return
        qualified = self.imports.qualify(callee)
        terminal = qualified.rsplit(".", 1)[-1]
        if self.catalog.call_placement(qualified) is not None:
            return  # `model.features = DataParallel(model.features)`: the call is the placement, seen already
        if (qualified.startswith(cat.MODULE_NAMESPACES[0]) or callee.startswith(cat.MODULE_NAMESPACES)) and terminal[:1].isupper():
            for handle in self._resolve_all(dotted):
                if handle.sub:
                    label = f"submodule reassignment `{dotted} = {callee}(...)`"
                    self._emit(PlacementEvent(self._site(target), handle, cat.REPLACE, label))

    # ----- expressions --------------------------------------------------------------------------
    def _eval(self, node: cst.BaseExpression) -> Value:
        if isinstance(node, (cst.Name, cst.Attribute)):
            dotted = dotted_name(node)
            if dotted is not None:
                if self._is_library_root(dotted.split(".", 1)[0]):
                    return _EMPTY
                carried = self._carried_parameters(dotted) if self._instances else None
                if carried:
                    return Value(params=carried)
                if (isinstance(node, cst.Attribute) and node.attr.value == cat.DEVICE_ATTRIBUTE
                        and dotted not in self.env and not _is_self_attribute(dotted)):
                    # `batch.device`, `model.device`: where it is (`self.device` is an attribute instead)
                    return Value(device_of=self._device_value(self._eval(node.value)))
                handles = self._resolve_all(dotted)
                binding = self.env.get(dotted) if "." not in dotted or dotted.startswith("self.") else None
                if binding is not None and dotted.count(".") <= 1:
                    value = _value_of(binding, handles)
                    if "." not in dotted and not value.callables and self._is_free(dotted):
                        defined = self._defined_callables(dotted)
                        if defined:  # most names are no class of this file: no copy of the value then
                            value = dataclasses.replace(value, callables=defined)
                    return value
                return Value(handles[0], alts=frozenset(handles[1:]),
                             callables=self._defined_callables(dotted) if "." not in dotted else frozenset())
            if isinstance(node, cst.Attribute):
                inner = self._eval(node.value)
                if node.attr.value == cat.DEVICE_ATTRIBUTE:
                    return Value(device_of=self._device_value(inner))  # `next(model.parameters()).device`
                return Value(params=inner.params)
        if isinstance(node, cst.Call):
            return self._eval_call(node)
        if isinstance(node, (cst.Lambda,)):
            return _EMPTY  # deferred code: its effects do not happen here
        if isinstance(node, cst.Subscript):
            return self._eval_subscript(node)
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self._eval_comprehension(node)
        if isinstance(node, cst.IfExp):
            self._eval(node.test)
            return _join_values([self._eval(node.body), self._eval(node.orelse)])
        params: FrozenSet[Handle] = frozenset()
        members: FrozenSet[Handle] = frozenset()
        holders: List[HolderEvent] = []
        xla = False
        container = isinstance(node, (cst.List, cst.Tuple, cst.Set, cst.Dict))
        positional = isinstance(node, (cst.List, cst.Tuple)) and all(isinstance(e, cst.Element) for e in node.elements)
        fields = []
        for child in _expression_children(node):
            value = self._eval(child)
            params = params | value.params
            xla = xla or value.xla
            if container:
                members = members | frozenset(value.handles) | value.members
                holders.extend(value.holders)  # `{"deep": deep_opt, "wide": wide_opt}` holds both
            if positional:
                fields.append(value)
        if isinstance(node, cst.SimpleString) and any(m in node.value.lower() for m in cat.REPLACING_DEVICE_MARKERS):
            xla = True
        if positional and len(fields) != len(node.elements):
            fields = []
        callables = callables_in(node, self._defined_callables) if isinstance(node, cst.Dict) else frozenset()
        return Value(params=params, xla=xla, members=members, fields=tuple(fields), callables=callables,
                     holders=_unique(holders) if container else ())

    def _eval_subscript(self, node: cst.Subscript) -> Value:
        """`net.blocks[i]` is (part of) `net.blocks`; `parts[0]` is one of the modules in `parts`."""
        keyed = self._kwarg(node)
        if keyed is not None:
            return keyed
        table = dotted_name(node.value) or ""
        if table.endswith(".__dict__") and cat.is_optimizer_module(self._qualify(table[: -len(".__dict__")])):
            return Value(makes=cat.LAZY)  # `torch.optim.__dict__[cfg.name]`: an optimizer class
        inner = self._eval(node.value)
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                self._eval(element.slice.value)
        if inner.callables:
            return Value(callables=_pick(inner.callables, node))
        if inner.members:
            return Value(_first(inner.members), params=inner.params, alts=inner.members)
        if inner.handle is not None and not inner.holders:
            return Value(inner.handle, params=inner.params, alts=inner.alts, device_of=inner.device_of)
        return Value(params=inner.params, device_of=inner.device_of)  # `batch[:, 0]` is where `batch` is

    def _eval_comprehension(self, node) -> Value:
        """A comprehension's targets are bound only inside it; its result holds what its element holds."""
        shadowed: Dict[str, Optional[Binding]] = {}
        try:
            clause = node.for_in
            while clause is not None:
                source = self._eval(clause.iter)
                for key in _bound_keys(clause.target):
                    shadowed.setdefault(key, self.env.get(key))
                self._bind_target(clause.target, _element_of(source))
                for condition in clause.ifs:
                    self._eval(condition.test)
                clause = clause.inner_for_in
            parts = [node.key, node.value] if isinstance(node, cst.DictComp) else [node.elt]
            element = _join_values([self._eval(part) for part in parts])
        finally:
            for key, binding in shadowed.items():
                if binding is None:
                    self.env.pop(key, None)
                else:
                    self.env[key] = binding
        return Value(params=element.params, members=frozenset(element.handles) | element.members, xla=element.xla)

    def _eval_receiver(self, call: cst.Call, dotted: Optional[str]) -> Tuple[Value, Optional[str], bool]:
        """(the value the called method is looked up on, the method's name, whether the call goes into
        a library module: `torch.nn.utils.clip_grad_norm_(...)`)."""
        func = call.func
        if not isinstance(func, cst.Attribute):
            return (_EMPTY if isinstance(func, cst.Name) else self._eval(func)), None, False
        method = func.attr.value
        if method in cat.REGROUP_METHODS:
            self.regroups = True
        root = dotted.split(".", 1)[0] if dotted else None
        if root is not None and self._is_library_root(root):
            return _EMPTY, method, True
        receiver = self._eval(func.value)
        if method in cat.REGROUP_METHODS and self._arrivals:
            # the function points the optimizers it was handed at the parameters it has now; through
            # whichever name (`for optim in ensure_tuple(optimizers)`), so all of them
            self._emit(ManagedEvent(self._site(call), self._arrivals, f".{method}()"))
        return receiver, method, False

    def _eval_call(self, call: cst.Call) -> Value:
        func = call.func
        dotted = dotted_name(func)
        keyed = self._kwarg(call)
        if keyed is not None:
            return keyed  # `kwargs.get("model")`
        receiver, method, library_call = self._eval_receiver(call, dotted)
        if method is not None and dotted is not None and (self._handlers or method in cat.HANDLER_REGISTRATIONS):
            self._run_handlers(call, dotted.rpartition(".")[0], method)
        first_event = len(self.scope.events)
        args = [(arg, self._eval(arg.value)) for arg in call.args]
        self._args_from = first_event  # the events the arguments made start here (see _helper_effect)
        arrived = tuple(h for _, value in args for h in value.holders if h.arrives)
        if arrived and self._rebinds_passed_holder(call, arrived):
            # `optimizer = OptimizerWrapper(optimizer)` in a function handed both: it owns the order
            self._emit(ManagedEvent(self._site(call), arrived, f"{_callee_name(func)}()"))
        if dotted == "type" and len(args) == 1 and args[0][1].holders:
            return Value(makes=args[0][1].holders[0].kind)  # `type(optimizer)(params, **optimizer.defaults)`
        built = self._built_holder(call, dotted, receiver, args)
        if built is not None:
            return built
        if dotted is not None and dotted in self.env and self.env[dotted].holder is None and not library_call:
            self._emit(ForwardEvent(self._site(call), self.env[dotted].handle))
        self._training_handoff(call, dotted, args)
        qualified = self._qualify(dotted) if dotted else ""
        xla = "xla_device" in qualified or any(value.xla for _, value in args)

        if qualified:
            result = self._library_effect(call, qualified, args, library_call or method is None)
            if result is not None:
                return result
        if method is not None and not library_call and dotted and self._defines_method(receiver, method, dotted):
            # `session.cuda()` on an object of this file's class that defines `cuda()` itself: its own
            # method, not torch's (methods resolve by the receiver's class)
            result = self._helper_effect(call, dotted, args)
            if result is not None:
                return result
        elif method is not None and not library_call:
            result = self._method_effect(call, method, receiver, args)
            if result is not None:
                return result
        if dotted:
            result = self._helper_effect(call, dotted, args)
            if result is not None and not result.holders and result.contains:
                # a project class that builds no holder its summary shows, named as an optimizer
                # (`QAdamOptimizer(model.parameters())`): the object is that optimizer
                generic = self._generic_holder(call, dotted, receiver, args)
                if generic is not None and generic.holders:
                    return generic
            if result is not None:
                return result
            # `self.placer_class(net)`, `PLACER(net)`: a value that is one of this file's classes
            result = self._call_callables(call, frozenset(c for c in self._eval(func).callables if c[1] != dotted), args)
            if result is not None:
                return result
            result = self._generic_holder(call, dotted, receiver, args)
            if result is not None:
                return result
        elif receiver.callables and not isinstance(func, cst.Attribute):
            # `PLACERS[cfg.placement](net)`: each class the registry may give
            result = self._call_callables(call, receiver.callables, args)
            if result is not None:
                return result
        elif _is_super_call(func):
            # `super().setup(trainer)`: the base class's method runs on this object
            result = self._helper_effect(call, f"self.{func.attr.value}", args, inherited=True)
            if result is not None:
                return result
        if dotted is None:
            result = self._built_by_use(call, args)
            if result is not None:
                return result
        return self._container_value(dotted, qualified, receiver, args, xla)

    def _container_value(self, dotted: Optional[str], qualified: str, receiver: Value, args, xla: bool) -> Value:
        """What a call the summaries do not know returns: a module container, a builtin that passes its
        items through (`list`, `zip`, `enumerate`), or something that carries the parameters handed in."""
        if qualified in cat.MODULE_CONTAINERS:
            # `nn.ModuleList([policy, q_func])`: a module whose children are the modules handed to it
            return Value(members=frozenset().union(*(frozenset(value.handles) | value.members for _, value in args)))
        if dotted in ("zip", "enumerate") and self._is_free(dotted) and args and not any(arg.star for arg, _ in args):
            # `for i, (block, lr) in enumerate(zip(net.blocks, lrs))`: each item is a tuple whose
            # positions are items of the sources
            sources = [value for arg, value in args if arg.keyword is None]
            items = (_EMPTY, _element_of(sources[0])) if dotted == "enumerate" else tuple(map(_element_of, sources))
            return Value(params=frozenset().union(*(value.params for _, value in args)),
                         members=sources[0].members | frozenset(sources[0].handles) if dotted == "enumerate" else frozenset(),
                         items=items)
        if dotted in _PASS_THROUGH and args:
            # `enumerate(parts)`, `list(net.children())`: the same modules, in another container.
            inner = args[-1][1] if dotted == "filter" else args[0][1]
            return Value(params=frozenset().union(*(value.params for _, value in args)),
                         members=inner.members | frozenset(inner.handles))
        params = receiver.params.union(*(value.params for _, value in args))
        if dotted and _PARAM_COLLECTOR.search(dotted.rsplit(".", 1)[-1]):
            # `param_groups(model, args.wd)`: the model, not the settings handed along with it
            given = {h for _, value in args for h in value.handles if not cat.is_config_root(h.text.split(".", 1)[0])}
            given |= set(receiver.handles)
            params = params | frozenset({h for h in given if _MODEL_NAME.search(h.text)} or given)
        return Value(params=params, xla=xla)

    def _built_holder(self, call: cst.Call, dotted: Optional[str], receiver: Value, args) -> Optional[Value]:
        """A call that builds an optimizer (or another holder): a known class or factory, or a callable
        that makes one (`getattr(torch.optim, name)`, `type(optimizer)`)."""
        maker = self._optimizer_class(call, dotted, args) or receiver.makes
        if maker is None and dotted is not None and "." not in dotted and dotted in self.env:
            maker = self.env[dotted].makes
        if maker is None:
            return None
        if dotted in cat.CLASS_HANDING_CALLS:
            return Value(makes=maker)
        if dotted:
            label = f"{dotted}()"
        elif isinstance(call.func, cst.Subscript):
            label = f"{_callee_name(call.func)}[...]()"  # `torch.optim.__dict__[name](...)`
        else:
            label = f"{_callee_name(call.func)}()"
        return self._holder(call, maker, label, args)

    def _optimizer_class(self, call: cst.Call, dotted: Optional[str], args) -> Optional[str]:
        """`getattr(torch.optim, name)` and `partial(torch.optim.AdamW, lr=...)` are optimizer classes."""
        if dotted not in cat.CLASS_HANDING_CALLS or not call.args:
            return None
        first = dotted_name(call.args[0].value)
        if first is None:
            return None
        qualified = self._qualify(first)
        if dotted == "getattr":
            return cat.LAZY if cat.is_optimizer_module(qualified) else None
        return self.catalog.holder_kind(qualified)

    def _is_library_root(self, root: str) -> bool:
        """A name that means an imported module here: imported and not rebound, or `torch` itself,
        which a star import re-exports without a visible import."""
        return root not in self.env and (self.imports.binds(root) or root == cat.TORCH)

    def _defined_callables(self, name: str) -> Callables:
        """A name of this file's classes or functions, or of a module-level table of them, read where
        nothing here rebinds it."""
        if name in self.module_tables:
            return self.module_tables[name]
        for table in (self.constructors, self.helpers):
            defines = getattr(table, "defines", None)
            if defines is not None and defines(name):
                return frozenset({(None, name)})
        return frozenset()

    def _is_free(self, name: str) -> bool:
        """Never bound in this scope: a global, a builtin or a module imported where we cannot see."""
        binding = self.env.get(name)
        return binding is None or binding.handle is self._free.get(name)

    def _qualify(self, dotted: str) -> str:
        return self.imports.qualify(dotted)

    def _training_handoff(self, call: cst.Call, dotted: Optional[str], args) -> None:
        """`train(model, optimizer)`: a call handed a bare module together with an optimizer trains
        through that module (a call handed only the module may just log or save it). Calls that
        manage the pair themselves (`accelerator.prepare`) are not training."""
        if not any(value.holders for _, value in args):
            return
        if dotted is not None and self.catalog.is_managed(self._qualify(dotted) or dotted):
            return
        for arg, value in args:
            name = dotted_name(arg.value)
            if not value.holders and value.handle is not None and name is not None and name in self.env:
                self._emit(ForwardEvent(self._site(call), value.handle))

    def _library_effect(self, call: cst.Call, qualified: str, args, is_function: bool) -> Optional[Value]:
        kind = self.catalog.holder_kind(qualified) if is_function or "." in qualified else None
        terminal = qualified.rsplit(".", 1)[-1]
        # `bnb.optim.AdamW8bit(...)` through a module we did not see imported: a free root, a class name
        is_function = is_function or (terminal[:1].isupper() and self._is_free(qualified.split(".", 1)[0]))
        if kind is not None and is_function:
            value = self._holder(call, kind, terminal, args, copies=terminal in cat.COPYING_HOLDERS)
            if qualified in cat.CONTAINING_HOLDERS and args and args[0][1].handle is not None:
                model = args[0][1]
                return Value(model.handle, holders=value.holders, alts=model.alts, contains=True)
            return value
        if qualified in ("copy.deepcopy",) and args:
            return Value(copy_of=args[0][1].handle)
        if is_function and (qualified in cat.PARAMETER_CLASSES or (qualified in cat.TENSOR_FACTORIES and _keyword_is_true(call, cat.REQUIRES_GRAD))):
            return Value(leaf=True)
        keyword = cat.DEVICE_KEYWORD_MOVES.get(qualified)
        if keyword is not None and args and _keyword_given(call, keyword) and not self._all_cpu(call, keyword):
            site = self._site(call)
            for handle in args[0][1].handles:
                self._emit(PlacementEvent(site, handle, cat.MOVE, f"{terminal}(..., {keyword}=...)", operation=terminal))
        if is_function and self.catalog.is_managed(qualified) and "." in qualified:
            held = tuple(holder for _, value in args for holder in value.holders)
            self._note_handled(self._site(call), (value for _, value in args))
            if held:
                self._emit(ManagedEvent(self._site(call), held, qualified))
                return Value()
        placement = self.catalog.call_placement(qualified) if is_function else None
        if placement is not None and args and args[0][1].handle is None and not args[0][1].holders:
            # `auto_model(resnet18())`: placed before it has a name, like `Net().cuda()`
            kind, unknown = _call_placement_kind(placement, call)
            event = PlacementEvent(self._site(call), Handle(-1, (), ""), kind, placement.label,
                                   placement.sync_wrapper, placement.ddp, operation=placement.label,
                                   unknown_keyword=unknown)
            return Value(pending=args[0][1].pending + (event,))
        if placement is not None and args and args[0][1].handle is not None:
            target = args[0][1]
            held = tuple(holder for _, value in args[1:] for holder in value.holders)
            if held:  # `ShardedDDP(model, optimizer)`: handed both, it remaps the optimizer itself
                self._emit(ManagedEvent(self._site(call), held, qualified))
                return Value(handle=target.handle, alts=target.alts)
            kind, unknown = _call_placement_kind(placement, call)
            site = self._site(call)
            for handle in target.handles:
                self._emit(PlacementEvent(site, handle, kind, placement.label, placement.sync_wrapper, placement.ddp,
                                          operation=placement.label, unknown_keyword=unknown))
            return Value(handle=target.handle, alts=target.alts)
        return None

    def _method_effect(self, call: cst.Call, method: str, receiver: Value, args) -> Optional[Value]:
        handle = receiver.handle
        if handle is None and method in cat.METHOD_PLACEMENTS and not receiver.holders:
            # `Net().to(device)`, `batch.get().to(device)`: placed before it has a name, and then there
            device = self._device_argument(call, args) if method == cat.DEVICE_MOVE else frozenset()
            kind, label, argument = _classify_method_placement(method, cat.METHOD_PLACEMENTS[method], call, args)
            if kind is None:
                return Value(pending=receiver.pending, device_of=device)
            placeholder = Handle(-1, (), "")
            event = PlacementEvent(self._site(call), placeholder, kind, label, argument_text=argument, operation=method,
                                   device_of=device)
            return Value(pending=receiver.pending + (event,), device_of=device)
        if method in cat.STATE_METHODS and handle is not None and not handle.sub and not self._silent:
            origin = self.origins.get(handle.obj)
            if origin is not None and origin.kind == "param":
                self.argument_state_calls.append((origin, method, next(self.order)))  # for its callers
        if method in cat.STATE_METHODS and receiver.holders:
            site = self._site(call)
            for holder in receiver.holders:
                self._emit(StateEvent(site, holder, method))
            return _EMPTY
        if method in cat.STATE_METHODS and handle is not None and handle.text.startswith("self.") and not handle.sub:
            if not self._silent:
                self.state_calls.append((handle.text, method))  # a method's effect on `self.optimizer`, for its callers
        if handle is None:
            return None
        if method in cat.COLLECTING_METHODS:
            # `decay.append(p)` for `p` of `named_parameters()`: p carries the model's parameters, it is no module
            collected = frozenset().union(*(value.params or frozenset(value.handles) for _, value in args)) if args else frozenset()
            members = frozenset().union(*(value.members | frozenset(value.handles) for _, value in args)) if args else frozenset()
            key = handle.text
            if key in self.env and collected and not handle.sub:
                binding = self.env[key]
                self._assign(key, dataclasses.replace(binding, params=binding.params | collected,
                                                      members=binding.members | members))
            return _EMPTY
        if method in cat.PARAMETER_METHODS:
            return Value(params=frozenset(receiver.handles))
        if method in ("values", "items") and receiver.members:
            return Value(params=receiver.params, members=receiver.members)  # `{"G": G, "D": D}.values()`
        if method in cat.MODULE_ITERATORS:
            return Value(members=frozenset(Handle(h.obj, h.sub + (ANY_SUBMODULE,), h.text) for h in receiver.handles))
        replacing = cat.KEYWORD_REPLACEMENTS.get(method)
        if replacing is not None and _keyword_is_true(call, replacing[0]):
            site = self._site(call)
            for each in receiver.handles:
                self._emit(PlacementEvent(site, each, cat.REPLACE, replacing[1]))
            return _EMPTY
        placement = cat.METHOD_PLACEMENTS.get(method)
        if placement is not None:
            return self._placed_by_method(call, method, placement, receiver, args)
        if method in cat.HOME_METHODS and not call.args:
            site = self._site(call)
            for each in receiver.handles:
                self._emit(PlacementEvent(site, each, cat.HOME, ".cpu()", operation=method))
        if method in cat.SELF_RETURNING_METHODS:
            return Value(handle=handle, alts=receiver.alts)
        return None

    def _placed_by_method(self, call: cst.Call, method: str, placement: cat.Placement, receiver: Value,
                          args) -> Value:
        """`model.to(device)`, `net.half()`: a move or cast of the module, of the modules it keeps, and of
        a container's members; a tensor's `.to()` is a new tensor instead."""
        handle = receiver.handle
        if handle.obj in self._leaves and method in cat.TENSOR_COPY_METHODS:
            # A tensor's `.to()` is a new tensor; bound back to its name, the optimizer keeps the old one.
            kind, label, _ = _classify_method_placement(method, placement, call, args)
            if kind is not None:
                return Value(copy_of=handle, copy_label=label, copy_operation=cat.TENSOR_COPY)
            return Value(handle=handle, alts=receiver.alts)
        device = self._device_argument(call, args) if method == cat.DEVICE_MOVE else frozenset()
        same = Value(handle=handle, alts=receiver.alts, device_of=device)
        if method == cat.FLOAT32_CAST and self._undo_cast(call):
            return same  # `model.half().float()`: a round trip that leaves float32
        kind, label, argument = _classify_method_placement(method, placement, call, args)
        if kind == cat.MOVE and method == cat.DEVICE_MOVE and (self._all_cpu(call) or self._moves_nothing(receiver, device)):
            kind = None
        if kind in (cat.MOVE, cat.CAST) and self._one_class_of_submodules(call.func):
            kind = None
        if kind is not None:
            if self.overwrite_flag and kind in (cat.MOVE, cat.CAST, cat.LAYOUT):
                kind, label = cat.REPLACE, f"{label} under set_overwrite_module_params_on_conversion(True)"
            site = self._site(call)
            carriers = tuple(h for h in receiver.holders if h.kind == cat.EMA)
            for each in receiver.handles:
                self._emit(PlacementEvent(site, each, kind, label, argument_text=argument, operation=method,
                                          carriers=carriers, device_of=device))
            # named as the code spells it (`self.cuda(rank)`), though it reaches `self.G`; a
            # container module (`nn.ModuleList([policy, q_func])`) moves the modules it holds
            whole = f"{dotted_name(call.func.value) or code_text(call.func.value)}{label}"
            own = {h.obj for h in receiver.handles}
            members = tuple(m for m in receiver.members if m.obj not in own)
            for each in self._children(call.func.value, receiver, method) + members:
                self._emit(PlacementEvent(site, each, kind, whole, argument_text=argument, operation=method,
                                          carriers=carriers))
        return same

    def _children(self, node: cst.BaseExpression, receiver: Value, method: str) -> Tuple[Handle, ...]:
        """The modules kept in the receiver's attributes as separate objects (`self.G = Generator()`,
        `self.model = model`): a module's move or cast moves its whole subtree, so `self.cuda()` in a
        module's own method moves `self.G`. Plain tensors kept in attributes are not moved, and a class
        that defines the method itself (a plain class's own `to()`) is not a module being moved."""
        kept = self._kept_by_instance(node, receiver, method)
        key = dotted_name(node)
        if key is None or not receiver.handles:
            return kept
        defines = getattr(self.method_helpers, "defines", None)
        if key == "self" and defines is not None and defines(method):
            return ()
        own = {h.obj for h in receiver.handles}
        prefix = key + "."
        children = []
        for name, binding in self.env.items():
            child = binding.handle
            if (name.startswith(prefix) and child.obj not in own and binding.holder is None
                    and child.obj not in self._data and child.obj not in self._leaves):
                children.append(Handle(child.obj, child.sub, name))
        return kept + tuple(c for c in children if all(c.obj != k.obj for k in kept))

    def _kept_by_instance(self, node: cst.BaseExpression, receiver: Value, method: str) -> Tuple[Handle, ...]:
        """The modules an object built here from a summarised class keeps from its constructor's
        arguments (`Wrapper(gen)` whose `__init__` does `self.gen = gen`): its children, moved with
        it, unless its class has a method of that name of its own."""
        instance = self._instances.get(receiver.handle.obj) if receiver.handle is not None else None
        if instance is None or instance[0](method) is not None:
            return ()
        own = {h.obj for h in receiver.handles}
        return tuple(dict.fromkeys(
            h for handles in instance[1].values() for h in handles
            if h.obj not in own and h.obj not in self._data and h.obj not in self._leaves))

    def _carried_parameters(self, dotted: str) -> FrozenSet[Handle]:
        """`mp.master_params` of an object built here whose constructor filled it with parameters."""
        owner, _, attribute = dotted.rpartition(".")
        binding = self.env.get(owner) if owner else None
        instance = self._instances.get(binding.handle.obj) if binding is not None else None
        return instance[5].get(f"self.{attribute}", frozenset()) if instance is not None else frozenset()

    def _kwarg(self, node: cst.BaseExpression) -> Optional[Value]:
        """What `kwargs["model"]` holds: the argument its callers pass as `model=` (while the name still
        holds the parameter)."""
        name = self._kwargs_name
        key = key_of(node, name) if name is not None else None
        binding = self._kwargs.get(key) if key is not None else None
        if binding is None:
            return None
        whole = self.env.get(name)
        origin = self.origins.get(whole.handle.obj) if whole is not None else None
        if origin is not None and origin.kind != "param":
            return None  # `kwargs = {...}` rebound it
        return _value_of(binding, (binding.handle,))

    def _device_value(self, value: Value) -> FrozenSet[int]:
        """Where a value's tensors are, as a device value: its own device value, else the objects whose
        parameters it carries, else the objects it is (a device held by a name is that name's value)."""
        if value.device_of:
            return value.device_of
        if value.params:
            return frozenset(h.obj for h in value.params)
        return frozenset(h.obj for h in value.handles)

    def _device_argument(self, call: cst.Call, args) -> FrozenSet[int]:
        """The device value `.to()` is handed (first positional, or `device=`); empty when unknown."""
        for arg, value in args:
            if (arg.keyword is None and not arg.star) or (arg.keyword is not None and arg.keyword.value == cat.DEVICE_KEYWORD):
                return self._device_value(value)
        return frozenset()

    def _moves_nothing(self, receiver: Value, device: FrozenSet[int]) -> bool:
        """`model.to(next(model.parameters()).device)`: to the place the object already is."""
        return bool(device) and bool(receiver.handles) and device == self._device_value(receiver)

    def _all_cpu(self, call: cst.Call, keyword: Optional[str] = None) -> bool:
        """`.to(device)` where every device argument is the CPU: spelled so, or a name bound to it on
        every path. With `keyword`, only that argument says where the call moves the model."""
        chosen = [arg.value for arg in call.args
                  if (arg.keyword is None and keyword is None) or (arg.keyword is not None and arg.keyword.value == (keyword or cat.DEVICE_KEYWORD))]
        return bool(chosen) and all(self._is_cpu(value) for value in chosen)

    def _one_class_of_submodules(self, func: cst.BaseExpression) -> bool:
        """`for m in model.modules(): if isinstance(m, Preprocessor): m.to(device)`: a move of the
        submodules of one class, whose parameters (often none) we cannot see, is no move of the model."""
        name = dotted_name(func.value) if isinstance(func, cst.Attribute) else None
        binding = self.env.get(name) if name else None
        if binding is None or not binding.element or binding.handle.sub[-1:] != (ANY_SUBMODULE,):
            return False
        if any(_filters_by_class(loop, name) for loop in self._chain if isinstance(loop, cst.For)):
            return True  # `for metric in (m for m in model.modules() if isinstance(m, Metric))`
        return any(guard.holds and _is_isinstance_check(guard.test, name) for guard in self._guards)

    def _is_cpu(self, node: cst.BaseExpression) -> bool:
        if _is_cpu_device(node):
            return True
        name = dotted_name(node)
        binding = self.env.get(name) if name else None
        return binding is not None and binding.cpu

    def _undo_cast(self, call: cst.Call) -> bool:
        inner = call.func.value if isinstance(call.func, cst.Attribute) else None
        events = self.scope.events
        undone = False
        while events and isinstance(events[-1], PlacementEvent) and events[-1].site.node is inner and events[-1].kind == cat.CAST:
            events.pop()
            undone = True
        return undone

    def _helper_effect(self, call: cst.Call, dotted: str, args, inherited: bool = False) -> Optional[Value]:
        """A call of a function, method or class the analysis has a summary of: its events replayed
        here on what this call hands it, and what it returns."""
        summary, instance = self._summary_for(dotted, inherited)
        if summary is None:
            return None
        summary = self._in_context(summary, call)
        own = dotted.startswith("self.") and instance is None  # a method of this very object
        positional = [value for arg, value in args if arg.keyword is None and arg.star == ""]
        keywords = {arg.keyword.value: value for arg, value in args if arg.keyword is not None}
        actual = self._actuals(positional, keywords, own, instance,
                               self._resolve_all(dotted.rpartition(".")[0]) if instance is not None else ())
        if (not own and instance is None) or (inherited and summary.key is not None):
            key = summary.key or (os.path.abspath(self.path) if self.path else "", dotted)
            if key[1].endswith(".__init__"):
                key = (key[0], key[1][: -len(".__init__")])  # a constructor's callers call its class
            self.calls.append((key, self._placed_before(summary, actual), self._handed(summary, call, positional, keywords)))
        via = f"{summary.name}()"
        truths = call_truths(summary.decidable, call.args) if summary.decidable else {}
        passed = self._replay_ownership(call, summary, args, own, instance, actual, via,
                                        (positional, keywords, truths))
        # the callee's steps and moves replay in its own order: `train_epoch(model, opt)` that moves the
        # model and then steps gives the optimizer its state after the move, not before
        first = min((event.site.order for _, _, event in summary.placements), default=None)
        self._replay_state_calls(call, summary, dotted, own, instance, positional, keywords, via, before=first)
        self._replay_placements(call, summary, actual, truths, via, self._origin_places(positional, keywords, own),
                                _handed_optimizers(args, summary))
        if first is not None:
            self._replay_argument_states(call, summary, positional, keywords, via, lambda order: order > first)
        if own:
            self._replay_self_holders(call, summary, actual, via)
        if summary.methods is not None:
            self._note_instance(call, summary, actual, passed)
        if summary.constructed or id(call) in self._built:
            # a new object: what its constructor built, and what it keeps of the arguments
            return self._construct(call, summary, actual, truths)
        if summary.fields:
            return self._returned_fields(call, summary, actual, positional)
        if summary.holder is not None:
            kind, label, models, bucket_view = summary.holder
            handles = frozenset(h for o, s in models for h in actual(o, s))
            if handles:
                event = HolderEvent(self._site(call), kind, f"{summary.name}()", handles, bucket_view=bucket_view)
                self._emit(event)
                return Value(holders=(event,))
        if summary.returns_param is not None and summary.returns_param < len(positional):
            returned = positional[summary.returns_param]
            return Value(handle=returned.handle, alts=returned.alts)
        if summary.returned_params:
            # `model.get_optim_policies()` returning `[{"params": self.base.parameters()}, ...]`
            params = frozenset(h for origin, sub in summary.returned_params for h in actual(origin, sub))
            if params:
                return Value(params=params)
        return None  # nothing known about the result: the generic rules still apply (an abstract stub)

    def _in_context(self, summary: HelperSummary, call: cst.Call) -> HelperSummary:
        """The callee's summary for this call's constant arguments, when they decide one of its tests."""
        if summary.in_context is None or not summary.arguments:
            return summary
        truths = call_truths(summary.arguments, call.args)
        if not any(key.removesuffix(NONE_TEST) in summary.tests for key in truths):
            return summary
        special = summary.in_context(truths)
        if special is None:
            return summary
        special.locate = special.locate or summary.locate
        special.key = special.key or summary.key
        return special

    def _summary_for(self, dotted: str, inherited: bool) -> Tuple[Optional[HelperSummary], Optional[Instance]]:
        """The summary a call resolves to (a helper of this file, a method of this class or of its bases,
        a class, a method of an object built here from a known class, another module's definition),
        and that object when it is one."""
        summary = None
        if inherited:
            lookup = getattr(self.method_helpers, "inherited", None)
            summary = lookup(dotted[5:]) if lookup is not None else None
        elif "." not in dotted:
            summary = self.helpers.get(dotted)
            if summary is None and self._is_free(dotted):
                summary = self.constructors.get(dotted)
        elif dotted.startswith("self.") and dotted.count(".") == 1:
            summary = self.method_helpers.get(dotted[5:])
        if dotted.startswith("self.") and dotted.count(".") == 1 and not inherited:
            self.self_calls.add(dotted[5:])
        instance = None
        owner, _, method_name = dotted.rpartition(".")
        if summary is None and owner and owner != "self":
            # `engine.prepare()`, `self.engine.prepare()` on an object built here from a known class
            instance = self._instance_of(owner)
            summary = instance[0](method_name) if instance is not None else None
            if summary is not None and summary.locate is None:
                summary.locate = instance[3]  # a class of another module: its methods are there too
            if summary is not None:
                self._note_method_order(owner, instance[4], method_name)
        if summary is None and self.project is not None and not dotted.startswith("self."):
            imported = self.imports.imported_name(dotted)
            if imported is not None and imported not in self.catalog.call_placements and not self._qualify(dotted) in self.catalog.holders:
                summary = self.project.lookup(imported, self.path)
        return summary, instance

    def _actuals(self, positional: List[Value], keywords: Dict[str, Value], own: bool, instance: Optional[Instance],
                 receiver: Tuple[Handle, ...] = ()):
        """What a summary's origin (a parameter, `self.x`) is at this call: the caller's objects; an
        attribute the object did not keep from its constructor's arguments is a part of the object."""

        def actual(origin: Origin, sub: Tuple[str, ...]) -> Tuple[Handle, ...]:
            if origin.kind == "param":
                value = _argument_of(origin, positional, keywords)
                if value is None:
                    return ()
                return tuple(Handle(h.obj, h.sub + sub, h.text) for h in value.handles)
            if origin.kind == "self" and own:
                return tuple(Handle(base.obj, base.sub + sub, origin.key) for base in self._resolve_all(origin.key))
            if origin.kind == "self" and instance is not None:
                # `engine.prepare()` moving `self.model`: the model the caller handed to `Engine(...)`
                kept = instance[1].get(origin.key, ())
                if not kept and origin.key.startswith("self."):
                    return tuple(Handle(h.obj, h.sub + (origin.key[5:],) + sub, h.text) for h in receiver)
                return tuple(Handle(h.obj, h.sub + sub, h.text) for h in kept)
            return ()

        return actual

    def _replay_ownership(self, call: cst.Call, summary: HelperSummary, args, own: bool,
                          instance: Optional[Instance], actual, via: str, at_call) -> Tuple[HolderEvent, ...]:
        """The optimizers handed to the call, and whether the callee takes over their order: it rebinds
        or regroups them, or re-points the optimizers it can reach once its moves are done."""
        passed = tuple(holder for _, value in args for holder in value.holders)
        named_optimizers = [text for text in (dotted_name(arg.value) or "" for arg, _ in args)
                            if cat.receives_optimizer(text.rsplit(".", 1)[-1].lstrip("_"))]
        if not passed and summary.regroups and self._arrivals and named_optimizers:
            # `prepare_fsdp_module(self.model, self.optimizers)` where `self.optimizers` is a property
            # over the optimizers this function was handed: the helper regroups them
            passed = self._arrivals
        if summary.regroups and any(text.startswith("self.") for text in named_optimizers):
            self.syncs_self_optimizers = True
        if own and summary.syncs_self_optimizers:
            self.syncs_self_optimizers = True
        if passed and summary.regroups:
            # a helper that re-adds the optimizer's param groups: it is handed the optimizer and owns the order
            self._emit(ManagedEvent(self._site(call), passed, via))
        elif summary.handled:
            # `model, optimizer = init_amp(model, optimizer)`: the helper owns the order where its body
            # hands the optimizer to a call that takes both, not where it hands it back as it came
            self._replay_handled(call, summary, at_call, passed if self._rebinds_passed_holder(call, passed) else (), via)
        if ((own or instance is not None) and summary.syncs_self_optimizers) or any(
                event.synced and actual(origin, sub) for origin, sub, event in summary.placements):
            # the method re-points the optimizers it can reach once its moves are done (a regrouping
            # helper handed `self.optimizers`, a syncing context around the move)
            held = self._held_holders() + (instance[2] if instance is not None else ())
            if held:
                self._emit(ManagedEvent(self._site(call, via=via), held, via))
        return passed

    def _replay_handled(self, call: cst.Call, summary: HelperSummary, at_call, passed: Tuple[HolderEvent, ...],
                        via: str) -> None:
        """The callee's handling of what it was handed (`HelperSummary.handled`), with its conditions:
        for this function's callers, and as the end of the order of the optimizers this call rebinds."""
        positional, keywords, truths = at_call
        for origin, inner in summary.handled:
            value = _argument_of(origin, positional, keywords)
            if value is None or never_runs(inner.guards + inner.inner, truths):
                continue
            site = dataclasses.replace(self._site(call, via=via), branches=self._branches + inner.branches,
                                       inner=inner.guards + inner.inner)
            self._note_handled(site, (value,))  # for this function's own callers
            held = tuple(holder for holder in value.holders if any(holder is p for p in passed))
            if held:
                self._emit(ManagedEvent(site, held, via))

    def _note_handled(self, site: Site, values) -> None:
        if self._silent:
            return
        for value in values:
            origin = self.origins.get(value.handle.obj) if value.handle is not None else None
            if origin is not None and origin.kind == "param" and not value.handle.sub:
                self.handled.append((origin, site))

    def _replay_state_calls(self, call: cst.Call, summary: HelperSummary, dotted: str, own: bool,
                            instance: Optional[Instance], positional: List[Value], keywords: Dict[str, Value],
                            via: str, before: Optional[int] = None) -> None:
        """The callee's `step()` / `load_state_dict()` on the optimizers it reaches: its object's own,
        or those handed to it."""
        if instance is not None:
            built = self.env.get(dotted.rpartition(".")[0])
            for key, method in summary.state_calls:  # `trainer.resume(path)` loading `self.opt`
                for holder in built.holders if built is not None else ():
                    if holder.attribute == key[5:]:
                        self._emit(StateEvent(self._site(call, via=via), holder, method))
        if own:
            for key, method in summary.state_calls:
                binding = self.env.get(key)
                for holder in binding.holders if binding is not None else ():
                    self._emit(StateEvent(self._site(call, via=via), holder, method))
        self._replay_argument_states(call, summary, positional, keywords, via,
                                     lambda order: before is None or order < before)

    def _replay_argument_states(self, call: cst.Call, summary: HelperSummary, positional: List[Value],
                                keywords: Dict[str, Value], via: str, chosen) -> None:
        for origin, method, order in summary.argument_state_calls:
            if not chosen(order):
                continue
            value = _argument_of(origin, positional, keywords)
            for holder in value.holders if value is not None else ():
                self._emit(StateEvent(self._site(call, via=via), holder, method))

    def _replay_placements(self, call: cst.Call, summary: HelperSummary, actual, truths: Dict[str, bool],
                           via: str, places, handed: Tuple[HolderEvent, ...] = ()) -> None:
        """The callee's moves, casts and wraps of what the caller handed it, on the paths this call's
        literal arguments leave open, but not its moves of an object to where it already is."""
        for origin, sub, event in summary.placements:
            handles = actual(origin, sub) if not never_runs(event.site.guards, truths) else ()
            device = places(event.device_origins) if event.device_origins else frozenset()
            handles = tuple(h for h in handles if not device or device != self._place_of(h))
            if event.operation in cat.TENSOR_COPY_METHODS:
                # a leaf tensor handed in: the callee's `patch = patch.float()` is a new tensor, the
                # caller's is untouched
                handles = tuple(h for h in handles if h.obj not in self._leaves)
            if not handles:
                continue
            # The helper's own branches come along: two of its placements on exclusive paths (a wrap in
            # one arm, a cast in another) are never one after the other.
            site = dataclasses.replace(self._site(call, via=via), branches=self._branches + event.site.branches,
                                       inner=event.site.guards + event.site.inner)
            elsewhere = event.elsewhere or (Elsewhere(summary.locate, event.site.node) if summary.locate else None)
            passed = _argument_at_call(call, summary.param_names, event.argument_text)
            argument = _plain_text(passed) if passed is not None else event.argument_text
            kind = cat.HOME if event.kind == cat.MOVE and passed is not None and self._is_cpu(passed) else event.kind
            for handle in handles:
                self._emit(PlacementEvent(site, handle, kind, event.label, event.sync_wrapper, event.ddp,
                                          argument, event.operation, elsewhere=elsewhere,
                                          unknown_keyword=event.unknown_keyword, synced=event.synced,
                                          device_of=device, handed_optimizers=handed))

    def _origin_places(self, positional: List[Value], keywords: Dict[str, Value], own: bool):
        """A summary's device value at this call: where the arguments (or this object's attributes) it
        was read from are; unknown when one of them is."""

        def places(origins) -> FrozenSet[int]:
            found: set = set()
            for origin in origins:
                if origin.kind == "param":
                    value = _argument_of(origin, positional, keywords)
                    place = self._device_value(value) if value is not None else frozenset()
                elif origin.kind == "self" and own:
                    binding = self.env.get(origin.key)
                    place = binding.device_of if binding is not None and binding.device_of else frozenset(
                        h.obj for h in self._resolve_all(origin.key))
                else:
                    place = frozenset()
                if not place:
                    return frozenset()
                found |= place
            return frozenset(found)

        return places

    def _place_of(self, handle: Handle) -> FrozenSet[int]:
        """Where an object's tensors are, as a device value: what a name bound to it says, else itself."""
        for binding in self.env.values():
            if binding.handle.obj == handle.obj and binding.device_of:
                return binding.device_of
        return frozenset({handle.obj})

    def _replay_self_holders(self, call: cst.Call, summary: HelperSummary, actual, via: str) -> None:
        """A method of this object that keeps an optimizer on it (`self.optimizer = SGD(...)`)."""
        for kind, label, models, bucket_view, var in summary.self_holders:
            handles = frozenset(h for o, sub in models for h in actual(o, sub))
            if handles:
                event = HolderEvent(self._site(call, via=via), kind, f"{label} in {via}", handles, var=var,
                                    bucket_view=bucket_view)
                self._emit(event)
                old = self.env.get(var)
                for previous in old.holders if old is not None else ():
                    # `self.compile(self.lr)` in `fit()` after its move: the optimizer is rebuilt
                    self._emit(RebindEvent(self._site(call, via=via), previous, event))
                self._assign(var, Binding(Handle(next(self.ids), (), var), holders=(event,)))

    def _note_instance(self, call: cst.Call, summary: HelperSummary, actual, passed: Tuple[HolderEvent, ...]) -> None:
        """An object built from a summarised class: what its attributes keep of the arguments, so that
        its methods called later (`engine.prepare()`) and its own moves reach them."""
        kept = {key: actual(origin, sub) for key, (origin, sub) in summary.attributes.items()}
        kept = {key: handles for key, handles in kept.items() if handles}
        # claimed by the name it is assigned to; the optimizers handed in are the object's too
        # holders built inside the arguments count too, even in a list (`State(model, [AdamW(...)])`)
        made = (e for e in self.scope.events[self._args_from:] if isinstance(e, HolderEvent))
        handed = tuple({id(h): h for h in (*passed, *made)}.values())
        carried = {key: frozenset(h for origin, sub in entries for h in actual(origin, sub))
                   for key, entries in summary.parameter_attributes.items()}
        self._built[id(call)] = (summary.methods, kept, handed, summary.locate, summary.name,
                                 {key: params for key, params in carried.items() if params})

    def _call_callables(self, call: cst.Call, callables: Callables, args) -> Optional[Value]:
        """A call of a value that is one of this file's classes or functions (`self.placer_class(net)`):
        the effect of each one it may be, and what the first known one returns."""
        result = None
        for name in sorted({name for _, name in callables}):
            value = self._helper_effect(call, name, args)
            result = result or value
        return result

    def _returned_fields(self, call: cst.Call, summary: HelperSummary, actual, positional: List[Value]) -> Value:
        """`opt, sched = training_state(model, cfg)`: the tuple the helper returns, position by position,
        with the holders built at this call on what the caller handed in."""
        values = []
        for entry in summary.fields:
            value = _EMPTY
            if entry is not None and entry[0] == "holder":
                kind, label, models, bucket_view = entry[1]
                handles = frozenset(h for o, s in models for h in actual(o, s))
                if handles:
                    event = HolderEvent(self._site(call), kind, f"{summary.name}()", handles, bucket_view=bucket_view)
                    self._emit(event)
                    value = Value(holders=(event,))
            elif entry is not None and entry[1] < len(positional):
                returned = positional[entry[1]]
                value = Value(handle=returned.handle, alts=returned.alts)
            values.append(value)
        return Value(fields=tuple(values))

    def _note_handed_back(self, returned: cst.BaseExpression) -> None:
        """`return model, MasterWeightOptimizer(optimizer)`: the optimizer a function was handed goes
        back to its callers rebuilt around the placed model (the function owns the order)."""
        calls = [returned] if isinstance(returned, cst.Call) else [
            element.value for element in getattr(returned, "elements", ()) if isinstance(element.value, cst.Call)]
        for call in calls:
            for arg in call.args:
                name = dotted_name(arg.value)
                binding = self.env.get(name) if name else None
                if binding is not None:
                    self._note_handled(self._site(call), (Value(handle=binding.handle),))  # for the callers
                arrived = tuple(h for h in binding.holders if h.arrives) if binding is not None else ()
                if arrived:
                    self._emit(ManagedEvent(self._site(call), arrived, f"{_callee_name(call.func)}()"))

    def _handed(self, summary: HelperSummary, call: cst.Call, positional: List[Value],
                keywords: Dict[str, Value]) -> Dict[str, object]:
        """What this call hands each parameter that may receive an optimizer, for the callee side: NONE
        (a literal `None` or falsy, or a falsy default left as it is), or ("arrived", the key and the
        name of this function's own parameter it forwards), or nothing said."""
        handed: Dict[str, object] = {}
        spread = any(arg.star for arg in call.args)
        for index, name in enumerate(summary.param_names):
            value = positional[index] if index < len(positional) else keywords.get(name)
            node = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
            if node is None and index < len(positional):
                node = [a.value for a in call.args if a.keyword is None and not a.star][index]
            if node is not None and literal_truth(node) is False:
                handed[name] = NONE_HANDED
            elif value is None and not spread and summary.decidable.get(name, (0, None))[1] is False:
                handed[name] = NONE_HANDED
            elif value is not None:
                arrived = next((h for h in value.holders if h.arrives), None)
                origin = self.origins.get(value.handle.obj) if value.handle is not None else None
                if arrived is not None:
                    handed[name] = ("arrived", arrived.arrives_key, arrived.var)
                elif origin is not None and origin.kind == "param" and self.arrival_key is not None and not value.handle.sub:
                    handed[name] = ("arrived", self.arrival_key, origin.key)  # forwards what its callers hand it
        return handed

    def _placed_before(self, summary: HelperSummary, actual) -> FrozenSet[Tuple[str, str, str]]:
        """The callee's placements of its arguments that this scope had already made on what it passes:
        moving a model that is already on a device (not the CPU) there again, or casting it to the
        dtype it has, is a round trip."""
        done = set()
        earlier = [e for e in self.scope.events if isinstance(e, PlacementEvent)]
        for origin, sub, event in summary.placements:
            handles = actual(origin, sub) if origin.kind == "param" else ()
            if handles and all(any(_same_place(prior, event) and prior.handle.overlaps(h) for prior in earlier)
                               for h in handles):
                done.add(placement_signature(event))
        return frozenset(done)

    def _rebinds_passed_holder(self, call: cst.Call, passed) -> bool:
        """Whether the statement holding `call` assigns its result to a name holding one of `passed`."""
        statement = self._chain[-1] if self._chain else None
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        names = {holder.var for holder in passed if holder.var}
        for small in statement.body:
            if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is call:
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                bound = {dotted_name(element) for target in targets for element in target_elements(target)}
                return bool(bound & names)
        return False

    def _construct(self, call: cst.Call, summary: HelperSummary, actual, truths: Dict[str, bool]) -> Value:
        """`agent = Agent(obs_dim)` whose `__init__` builds `Adam(self.parameters())`: a new module that
        holds its own optimizer, so moving it later (`agent.to(device)`) moves that optimizer's model."""
        new = Handle(next(self.ids), (), f"{summary.name}()")
        self.scope.built_here.add(new.obj)
        if id(call) in self._built:
            self._instances[new.obj] = self._built.pop(id(call))
        holders = []
        for inner, label, models, bucket_view, attribute in summary.constructed:
            if never_runs(inner.site.guards, truths):
                continue  # under a condition this call's literal arguments make false
            handles = frozenset(
                handle for origin, sub in models
                for handle in ((Handle(new.obj, sub, ".".join((new.text,) + sub)),) if origin.kind == "new" else actual(origin, sub))
            )
            if isinstance(inner, PlacementEvent):
                site = self._site(call, via=f"{summary.name}()")
                elsewhere = inner.elsewhere or (Elsewhere(summary.locate, inner.site.node) if summary.locate else None)
                for handle in handles:
                    self._emit(dataclasses.replace(inner, site=site, handle=handle, elsewhere=elsewhere))
                continue
            kind = inner.kind
            if handles:
                event = HolderEvent(self._site(call), kind, f"{label} in {summary.name}.__init__", handles,
                                    bucket_view=bucket_view, attribute=attribute)
                self._emit(event)
                holders.append(event)
        return Value(new, holders=tuple(holders), contains=True)

    def _generic_holder(self, call: cst.Call, dotted: str, receiver: Value, args) -> Optional[Value]:
        terminal = dotted.rsplit(".", 1)[-1]
        if self._in_test:
            return None
        if any(self._hands_optimizer(arg) for arg, _ in args):
            return None  # handed an optimizer (`self._mse_optimizer(batch, critic, critic_optim)`): it uses one
        if not cat.is_generic_holder_name(terminal):
            qualified = self._qualify(dotted)
            if qualified in self.catalog.holders:
                return self._holder(call, self.catalog.holders[qualified], terminal, args)
            if receiver.holders or not self._builds_from_config(call, dotted):
                return self._built_by_use(call, args) if not receiver.holders else None
            receiver = _EMPTY  # a config or builder object, not the model
        elif (cat.HOLDER_TERMINALS.get(terminal) != cat.FACTORY and not any(value.params for _, value in args)
              and not self._used_as_optimizer(call)):
            return None  # only its name says optimizer (`optim_context()`, `_test_optimizer()`)
        if any(value.holders for _, value in args) and self.catalog.is_managed(dotted):
            return None
        return self._holder(call, cat.FACTORY, f"{terminal}()", args, receiver)

    def _built_by_use(self, call: cst.Call, args) -> Optional[Value]:
        """Types from use at the construction: a call that names nothing we know (`optims.__dict__[name]
        (model.parameters())`, a class picked at run time) builds an optimizer when it is handed the
        parameters first and this file uses what it returns as one. Neither alone is evidence: many
        calls take parameters (`clip_grad_norm_`), and a name used as an optimizer may hold a factory."""
        if self._in_test or self.optimizer_uses is None or not args:
            return None
        first, value = args[0]
        if first.keyword is not None or first.star or not value.params or value.holders:
            return None
        handed = first.value
        method = handed.func.attr.value if isinstance(handed, cst.Call) and isinstance(handed.func, cst.Attribute) else None
        if not cat.hands_parameters(method, None if method else dotted_name(handed)):
            return None
        if not self._used_as_optimizer(call, only_optimizers=True):
            return None
        return self._holder(call, cat.FACTORY, f"{_callee_label(call.func)}()", args)

    def _used_as_optimizer(self, call: cst.Call, only_optimizers: bool = False) -> bool:
        """Types from use: a call known by its name alone, handed no parameters, builds an optimizer
        only when what it returns is used as one in this file (stepped, scheduled, handed on as
        `optimizer=`; analysis/uses.py), or is returned for the callers to use, or is kept in an
        attribute named for optimizers (`self.optimizers, ... = self.init_optimizers(model)`): an
        attribute's uses may lie in other files, a local name's all lie here. `only_optimizers` asks
        for uses that only an optimizer has, or a hand-over as `optimizer=` (a `step()` alone is a
        scheduler's or a clipper's too), and never counts a return."""
        if self.optimizer_uses is None:
            return True
        small = self._current_node
        if isinstance(small, cst.Return):
            return not only_optimizers and _is_part(call, small.value)
        value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
        targets = ([t.target for t in small.targets] if isinstance(small, cst.Assign)
                   else [small.target] if isinstance(small, cst.AnnAssign) else [])
        named = []
        for target in targets:
            if isinstance(value, cst.Tuple) and isinstance(target, (cst.Tuple, cst.List)):
                named += [t.value for t, v in zip(target.elements, value.elements) if v.value is call]
            elif value is call:
                named += [t.value for t in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
        uses = self.optimizer_uses()
        used = uses.alone | uses.handed if only_optimizers else uses.names
        for key in filter(None, map(dotted_name, named)):
            if use_key(key) in used or ("." in key and cat.names_optimizer(use_key(key))):
                return True
        return _handed_as_optimizer(call, small)

    def _hands_optimizer(self, arg: cst.Arg) -> bool:
        """An argument that is an optimizer object: not a config entry naming one (`cfg.optimizer`),
        not a module (`torch.optim`), not a registry (`OPTIMIZERS`)."""
        text = dotted_name(arg.value)
        if text is not None and self.imports.binds(text.split(".", 1)[0]):
            return False
        if text is None or not _OPTIMIZER_ARGUMENT.search(text) or cat.config_entry_names_optimizer(text):
            return False
        if text.rsplit(".", 1)[-1].isupper():
            return False  # a registry (`OPTIMIZERS`), not an optimizer
        return not cat.is_config_root(text.split(".", 1)[0])

    def _builds_from_config(self, call: cst.Call, dotted: str) -> bool:
        """`instantiate(cfg.optimizer, ...)`, `config.init_obj("optimizer", torch.optim, params)`,
        `builder.build(cfg.optim, model)`: a factory named for nothing, told by a config entry that
        names an optimizer."""
        root = dotted.split(".", 1)[0]
        from_config = "." in dotted and cat.is_config_root(root)
        for arg in call.args:
            if arg.keyword is not None:
                continue
            text = dotted_name(arg.value)
            if text is not None and cat.config_entry_names_optimizer(text):
                return True
            if from_config and isinstance(arg.value, cst.SimpleString) and cat.names_optimizer(arg.value.value.strip("'\"")):
                return True
        return False

    def _holder(self, call: cst.Call, kind: str, label: str, args, receiver: Value = _EMPTY, copies: bool = False) -> Value:
        wrapped = args[0][1].holders if args and args[0][0].keyword is None and kind != cat.EMA else ()
        if wrapped:
            # `hvd.DistributedOptimizer(optimizer, ...)`: an optimizer built around another is that
            # optimizer, wrapped; it holds what it holds (one bug, one report, at the first build)
            return Value(holders=wrapped)
        placed_copy = copies and any(arg.keyword is not None and arg.keyword.value == cat.COPY_DEVICE_KEYWORD
                                     for arg, _ in args)
        models = set()
        passed = set()
        for arg, value in args:
            models.update(value.params)
            models.update(m for m in value.members | frozenset(value.handles) if m.obj in self._leaves)  # `Adam([log_alpha])`
            if kind in (cat.FACTORY, cat.EMA) and arg.keyword is None and value.handle is not None and not value.holders:
                text = value.handle.text
                if text.count(".") == 0 or (text.startswith("self.") and text.count(".") == 1):
                    # a name holding parameters (`trainable = filter(...)`) gave them above
                    if not value.params and not self._holds_data(text) and not cat.names_optimizer(text):  # `cfg.optimizer`, `args.lr`, `[1e-3, 1e-4]` are settings
                        passed.update(value.handles)
        modelish = {h for h in passed if _MODEL_NAME.search(h.text)}
        models.update(modelish or passed)
        if receiver.handle is not None and not receiver.holders and kind == cat.FACTORY:
            # `model.configure_optimizers(...)`: the receiver is the model. Another receiver (a trainer's
            # `self`, `self.trainer`) is only the model when nothing else was passed.
            if not models or _MODEL_NAME.search(receiver.handle.text.rsplit(".", 1)[-1]):
                models.update(receiver.handles)
        models = {m for m in models if not self._is_holder_handle(m)}
        if not models:
            # `instantiate(cfg.optimizer)` with Hydra's `_partial_`: what it returns builds the optimizer
            return Value(makes=kind if kind == cat.FACTORY or not call.args else None)
        event = HolderEvent(
            self._site(call), kind, label, frozenset(models), bucket_view=_keyword_is_true(call, "parameters_as_bucket_view"),
            copies=copies,
            placed_copy=placed_copy,
        )
        self._emit(event)
        return Value(holders=(event,))

    def _holds_data(self, key: str) -> bool:
        binding = self.env.get(key)
        return binding is not None and binding.handle.obj in self._data

    def _is_holder_handle(self, handle: Handle) -> bool:
        binding = self.env.get(handle.text)
        return binding is not None and binding.holder is not None

    def _check_discarded(self, node: cst.BaseExpression, value: Value) -> None:
        if not isinstance(node, cst.Call):
            return
        dotted = dotted_name(node.func)
        if not dotted:
            return
        placement = self.catalog.call_placement(self._qualify(dotted))
        if placement is not None and placement.sync_wrapper:
            self._emit(DiscardedWrapperEvent(self._site(node), value.handle, placement.label))

    # ----- bookkeeping --------------------------------------------------------------------------
    def _site(self, node: cst.CSTNode, via: Optional[str] = None) -> Site:
        return Site(next(self.order), node, self._chain, self._branches, self._guards, len(self._loops),
                    via or self._running_via, self._dead, handler=self._running_via)

    def _emit(self, event: object) -> None:
        if not self._silent:
            if self._synced and isinstance(event, PlacementEvent):
                event = dataclasses.replace(event, synced=True)
            self.scope.events.append(event)
        if isinstance(event, PlacementEvent) and event.kind in (cat.MOVE, cat.REPLACE):
            self._forget_place(event.handle.obj)

    def _forget_place(self, obj: int) -> None:
        """After a move of an object, a device value read from it before names where it was, not where it
        is: such values become unknown (never wrong)."""
        for key, binding in list(self.env.items()):
            if binding.device_of and (obj in binding.device_of or binding.handle.obj == obj):
                self._assign(key, dataclasses.replace(binding, device_of=frozenset()))

    def _run_handlers(self, call: cst.Call, owner: str, method: str) -> None:
        """`trainer.run(loader)`: the functions registered on `trainer` run now, in the order they were
        registered, with the names they capture as they are here. `trainer.add_event_handler(e, fn)`
        registers `fn`, one of this function's nested functions."""
        if method in cat.HANDLER_REGISTRATIONS:
            nested = {d.name.value: d for d in self._nested_functions()}
            for arg in call.args:
                name = dotted_name(arg.value)
                if name in nested:
                    self._handlers.setdefault(owner, []).append(nested[name])
            return
        for handler in self._handlers.get(owner, ()):
            if id(handler) in self._running:
                continue
            self._running.add(id(handler))
            alive, returns, via = self._alive, list(self.returns), self._running_via
            self._running_via = f"{handler.name.value}() run by {owner}.{method}()"
            try:
                self._walk_block(suite_body(handler.body))
            finally:
                self._running.discard(id(handler))
                self._alive, self.returns, self._running_via = alive, returns, via

    def _nested_functions(self) -> List[cst.FunctionDef]:
        root = self._chain[0] if self._chain else None
        body = suite_body(root.body) if isinstance(root, cst.FunctionDef) else ()
        return [statement for statement in body if isinstance(statement, cst.FunctionDef)]

    def _note_method_order(self, owner: str, class_name: str, method: str) -> None:
        """`learner.compile(); learner.fit()`: on this object, `compile` ran before `fit` (the class's own
        scope learns the order its callers call its methods in)."""
        obj = self.env[owner].handle.obj
        called = self._instance_calls.setdefault(obj, [])
        self.method_orders.update((class_name, earlier, method) for earlier in called if earlier != method)
        called.append(method)

    def _defines_method(self, receiver: Value, method: str, dotted: str) -> bool:
        """Whether the receiver is an object of a summarised class that has the method: one built here,
        or `self` in a class that defines it (its own `compile()`, not torch's)."""
        if dotted == f"self.{method}":
            defines = getattr(self.method_helpers, "defines", None)
            return defines is not None and defines(method)
        instance = self._instances.get(receiver.handle.obj) if receiver.handle is not None else None
        return instance is not None and instance[0](method) is not None

    def _instance_of(self, name: str):
        """The class summary and attributes of the object a plain name holds, if it was built here."""
        binding = self.env.get(name)
        return self._instances.get(binding.handle.obj) if binding is not None else None

    def _held_holders(self) -> Tuple[HolderEvent, ...]:
        """Every holder a name of this scope refers to, and every optimizer handed to it, once each."""
        held = [h for b in self.env.values() for h in b.holders] + list(self._arrivals)
        return tuple({id(h): h for h in held}.values())


_ROLE_WORDS = re.compile(r"(?i)optimi[sz]ers?|optims?|models?|networks?|nets?|modules?|backbones?|generators?"
                         r"|discriminators?|polic(?:y|ies)")


def _handler_owner(function: cst.FunctionDef) -> Optional[str]:
    """`@trainer.on(Events.STARTED)` above a nested function: `trainer`."""
    for decorator in function.decorators:
        node = decorator.decorator
        func = node.func if isinstance(node, cst.Call) else node
        if isinstance(func, cst.Attribute) and func.attr.value in cat.HANDLER_REGISTRATIONS:
            return dotted_name(func.value)
    return None


def _called_and_kept_names(function: cst.FunctionDef) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """The plain names a function's body calls (`optimizer(params)`: parameters used as factories),
    and those it keeps in attributes (`self.optimizer = optimizer`: their uses may lie in other files,
    in the methods of a subclass or in the training loop that reads the attribute)."""
    called, kept = set(), set()

    class _Names(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name):
                called.add(node.func.value)

        def visit_Assign(self, node: cst.Assign) -> None:
            if not any(isinstance(t.target, (cst.Attribute, cst.Tuple)) for t in node.targets):
                return
            values = ([e.value for e in node.value.elements] if isinstance(node.value, (cst.Tuple, cst.List))
                      else [node.value])
            kept.update(value.value for value in values if isinstance(value, cst.Name))

    function.body.visit(_Names())
    return frozenset(called), frozenset(kept)


def _is_part(call: cst.Call, node: Optional[cst.BaseExpression]) -> bool:
    """`return build_optimizer(model)` or `return build_optimizer(model), scheduler`."""
    if node is call:
        return True
    return isinstance(node, (cst.Tuple, cst.List)) and any(e.value is call for e in node.elements)


def _handed_as_optimizer(call: cst.Call, small: cst.CSTNode) -> bool:
    """`Trainer(model, optimizer=build_optimizer(model))`: an argument given where an optimizer goes."""
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Arg(self, node: cst.Arg) -> None:
            if node.value is call and node.keyword is not None and OPTIMIZER_KEYWORD.match(node.keyword.value):
                found.append(node)

    small.visit(_Find())
    return bool(found)


def _qualifier(name: str) -> str:
    """What a parameter's name adds to its role: `sharded` in `sharded_optimizer`, `g` in `netG`."""
    return _ROLE_WORDS.sub("", name, count=1).strip("_").lower()


def placement_signature(event: PlacementEvent) -> Tuple[str, str, str]:
    """What a placement does, comparable between a callee's summary and its own scope's events."""
    return (str(event.kind), event.label, event.argument_text)


def _same_place(prior: PlacementEvent, event: PlacementEvent) -> bool:
    if prior.kind != event.kind:
        return False
    if event.kind == cat.MOVE:
        return not any(device in text for text in (prior.argument_text, event.argument_text, prior.label, event.label)
                       for device in cat.NOOP_DEVICES)
    if event.kind == cat.CAST:
        return cat.DTYPE_ALIASES.get(prior.argument_text or prior.operation, prior.argument_text or prior.operation) == \
            cat.DTYPE_ALIASES.get(event.argument_text or event.operation, event.argument_text or event.operation)
    return False


def _is_super_call(func: cst.BaseExpression) -> bool:
    return (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call)
            and isinstance(func.value.func, cst.Name) and func.value.func.value == "super")


# ----- the values at a merge ------------------------------------------------------------------------
def _handle_key(handle: Handle) -> Tuple[int, Tuple[str, ...]]:
    return handle.obj, handle.sub


def _first(handles: FrozenSet[Handle]) -> Optional[Handle]:
    return min(handles, key=_handle_key) if handles else None


def literal_key(node: cst.BaseExpression) -> Optional[str]:
    """A registry key written as a plain string literal, or None."""
    if isinstance(node, cst.SimpleString) and not any(p in node.prefix.lower() for p in "fb"):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    return None


def callables_in(value: cst.BaseExpression, resolve: Callable[[str], Callables]) -> Callables:
    """The classes or functions a name or a registry dict (`{"gpu": GpuPlacer, "cpu": CpuPlacer}`) holds,
    under their keys; `resolve` says what a plain name is."""
    if isinstance(value, cst.Dict):
        pairs = set()
        for element in value.elements:
            name = dotted_name(element.value) if isinstance(element, cst.DictElement) else None
            if name is not None and "." not in name:
                pairs.update((literal_key(element.key), found) for _, found in resolve(name))
        return frozenset(pairs)
    name = dotted_name(value)
    return resolve(name) if name is not None and "." not in name else frozenset()


def _pick(callables: Callables, node: cst.Subscript) -> Callables:
    """`PLACERS["cpu"]` is the one under that key; `PLACERS[cfg.name]` any of them."""
    index = node.slice[0].slice if len(node.slice) == 1 else None
    key = literal_key(index.value) if isinstance(index, cst.Index) else None
    chosen = {(None, name) for k, name in callables if key is not None and k == key}
    return frozenset(chosen or {(None, name) for _, name in callables})


def _value_of(binding: Binding, handles: Tuple[Handle, ...]) -> Value:
    return Value(handles[0], binding.params, binding.holders, binding.xla, alts=frozenset(handles[1:]),
                 members=binding.members, makes=binding.makes, callables=binding.callables,
                 device_of=binding.device_of)


def _element_of(source: Value) -> Value:
    """What a loop over `source` binds its target to: one of the modules it holds (`for part in
    [net.a, net.b]`, `for sub in net.modules()`, `for block in net.blocks`), or, for a loop over
    parameters, something that carries them but is no module."""
    if source.items:
        return Value(params=source.params, fields=source.items)
    if source.members:
        return Value(_first(source.members), params=source.params, alts=source.members, element=True)
    if source.handle is not None and not source.holders:
        return Value(source.handle, params=source.params, alts=source.alts)
    return Value(params=source.params)


def _unique(holders: Iterable[HolderEvent]) -> Tuple[HolderEvent, ...]:
    found: List[HolderEvent] = []
    for holder in holders:
        if all(holder is not other for other in found):
            found.append(holder)
    return tuple(found)


def _join_values(values: Sequence[Value]) -> Value:
    handles = [h for value in values for h in value.handles]
    return Value(
        handles[0] if handles else None,
        params=frozenset().union(*(value.params for value in values)),
        holders=_unique(h for value in values for h in value.holders),
        xla=any(value.xla for value in values),
        alts=frozenset(handles[1:]),
        members=frozenset().union(*(value.members for value in values)),
        device_of=_same_device(value.device_of for value in values),
    )


def _join(bindings: Sequence[Binding]) -> Binding:
    first = bindings[0]
    seen = {}
    for binding in bindings:
        for handle in (binding.handle, *binding.alts):
            seen.setdefault(_handle_key(handle), handle)
    others = frozenset(h for key, h in seen.items() if key != _handle_key(first.handle))
    return Binding(
        first.handle,
        params=frozenset().union(*(b.params for b in bindings)),
        holders=_unique(h for b in bindings for h in b.holders),
        xla=any(b.xla for b in bindings),
        cpu=all(b.cpu for b in bindings),
        alts=others,
        members=frozenset().union(*(b.members for b in bindings)),
        callables=frozenset().union(*(b.callables for b in bindings)),
        device_of=_same_device(b.device_of for b in bindings),
    )


def _is_self_attribute(dotted: str) -> bool:
    return dotted.startswith("self.") and dotted.count(".") == 1


def _same_device(devices: Iterable[FrozenSet[int]]) -> FrozenSet[int]:
    """A device value known on every path, the same on each; else unknown."""
    known = set(devices)
    return known.pop() if len(known) == 1 else frozenset()


def _merge(envs: Sequence[Env], written: Optional[Iterable[str]] = None) -> Env:
    """The names after paths meet: each holds what it holds on any path (a name bound on only some
    paths keeps what those paths give it). `written`: the only names the paths may have rebound."""
    if len(envs) == 1:
        return envs[0]
    merged = dict(envs[0])
    if written is not None:
        differing = {key for key in written if any(env.get(key) is not merged.get(key) for env in envs)}
    else:
        differing = set()
        for env in envs[1:]:
            for key, binding in env.items():
                if merged.get(key) is not binding:
                    differing.add(key)
            differing.update(key for key in merged if key not in env)
    for key in differing:
        found = [env[key] for env in envs if key in env]
        merged[key] = _join(found) if len(found) > 1 else found[0]
    return merged


_LITERALS = (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List,
             cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.BinaryOperation, cst.UnaryOperation)


def _is_data(node: Optional[cst.BaseExpression], value: Value) -> bool:
    """A literal, or a container or sum built from nothing that holds a module or its parameters."""
    return isinstance(node, _LITERALS) and not (value.params or value.members or value.holders or value.handle)


# Builtins that hand on the modules of their first argument in another container.
_PASS_THROUGH = frozenset({"enumerate", "list", "tuple", "reversed", "sorted", "iter", "filter", "set"})


def _keyword_is_true(call: cst.Call, keyword: str) -> bool:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return False


def _rebound_in(loop) -> FrozenSet[str]:
    """The names (and `self.x`) a loop's own statements bind, nested blocks included (statements only:
    far cheaper than walking the body)."""
    keys: set = set()
    _collect_bound(loop.body, keys)
    return frozenset(keys)


def _collect_bound(suite: cst.BaseSuite, keys: set) -> None:
    statements = suite.body if isinstance(suite, cst.IndentedBlock) else (suite,)
    for statement in statements:
        smalls = statement.body if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else ()
        for small in smalls:
            targets = ()
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                targets = [small.target]
            for target in targets:
                keys.update(_bound_keys(target))
        if isinstance(statement, cst.For):
            keys.update(_bound_keys(statement.target))
        if isinstance(statement, cst.With):
            keys.update(key for item in statement.items if item.asname is not None for key in _bound_keys(item.asname.name))
        if isinstance(statement, cst.BaseCompoundStatement):
            for inner in suites(statement):
                _collect_bound(inner, keys)


def _bound_keys(target: cst.BaseExpression) -> Iterator[str]:
    """The names (and `self.x`) an assignment, loop or comprehension target binds."""
    for element in target_elements(target):
        dotted = dotted_name(element)
        if dotted is not None and (dotted.count(".") == 0 or (dotted.startswith("self.") and dotted.count(".") == 1)):
            yield dotted


def _filters_by_class(loop: cst.For, name: str) -> bool:
    """`for name in (m for m in x.modules() if isinstance(m, Metric))`: the loop walks the submodules
    of one class, picked by the comprehension it iterates."""
    if not (isinstance(loop.target, cst.Name) and loop.target.value == name):
        return False
    source = loop.iter
    if not isinstance(source, (cst.GeneratorExp, cst.ListComp, cst.SetComp)) or source.for_in.inner_for_in is not None:
        return False
    element = dotted_name(source.elt)
    return element is not None and dotted_name(source.for_in.target) == element and any(
        _is_isinstance_check(condition.test, element) for condition in source.for_in.ifs)


def _is_isinstance_check(test: cst.BaseExpression, name: str) -> bool:
    if isinstance(test, cst.BooleanOperation):
        return _is_isinstance_check(test.left, name) or _is_isinstance_check(test.right, name)
    return (isinstance(test, cst.Call) and dotted_name(test.func) == "isinstance" and bool(test.args)
            and dotted_name(test.args[0].value) == name)


def _is_params_entry(target: cst.BaseExpression) -> bool:
    """`<anything>["params"]` as an assignment target."""
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return False
    index = target.slice[0].slice
    return (isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString)
            and index.value.raw_value == "params")


def _callee_name(func: cst.BaseExpression) -> str:
    while isinstance(func, (cst.Call, cst.Subscript)):
        func = func.func if isinstance(func, cst.Call) else func.value
    return dotted_name(func) or "call"


def _argument_of(origin: Origin, positional: List[Value], keywords: Dict[str, Value]) -> Optional[Value]:
    """What a call hands the parameter an origin names: by position, else by keyword."""
    return positional[origin.index] if origin.index < len(positional) else keywords.get(origin.key)


def _argument_at_call(call: cst.Call, param_names: Tuple[str, ...], text: str) -> Optional[cst.BaseExpression]:
    """A helper's `module.to(device)` moves where its caller says: the caller's argument for that
    parameter (`to_device(model, "cpu")`), so that two calls of one helper are told apart."""
    if text not in param_names:
        return None
    index = param_names.index(text)
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    passed = positional[index] if index < len(positional) else next(
        (arg for arg in call.args if arg.keyword is not None and arg.keyword.value == text), None)
    return passed.value if passed is not None else None


def _handed_optimizers(args, summary: HelperSummary) -> Tuple[HolderEvent, ...]:
    """The optimizers a call hands to the callee's parameters that take an optimizer by their name and
    that the callee leaves as they came (one it handles, `amp.initialize`, a rebuild, owns the order
    instead and reports nothing: the callers decide by what it does, see `_replay_handled`)."""
    if summary.regroups:
        return ()
    param_names = summary.param_names
    takes = {name for name in param_names + summary.kwargs_keys if cat.receives_optimizer(name)}
    takes -= {origin.key for origin, _ in summary.handled}
    if not takes:
        return ()
    handed: List[HolderEvent] = []
    positional = [value for arg, value in args if arg.keyword is None and not arg.star]
    for index, value in enumerate(positional[: len(param_names)]):
        if param_names[index] in takes:
            handed.extend(value.holders)
    for arg, value in args:
        if arg.keyword is not None and arg.keyword.value in takes:
            handed.extend(value.holders)  # `optimizers={"deep": deep_opt, "wide": wide_opt}` too
    return tuple(handed)


def _callee_label(func: cst.BaseExpression) -> str:
    """A looked-up callee as the code spells it, its key elided: `optims.__dict__[...]`."""
    if isinstance(func, cst.Subscript):
        return f"{_callee_label(func.value)}[...]"
    if isinstance(func, cst.Call):
        return f"{_callee_label(func.func)}(...)"
    return dotted_name(func) or "call"


def _true_keywords(call: cst.Call) -> Iterator[str]:
    return (arg.keyword.value for arg in call.args
            if arg.keyword is not None and isinstance(arg.value, cst.Name) and arg.value.value == "True")


def _call_placement_kind(placement: cat.Placement, call: cst.Call) -> Tuple[str, str]:
    """The kind of a placement call, and the deciding keyword when the call hides it."""
    kind = placement.kind_given(_true_keywords(call))
    if kind == cat.REPLACE and placement.orig_params_kw and _keyword_unknown(call, placement.orig_params_kw):
        # precision first: `FSDP(m, **kwargs)` may well set `use_orig_params=True` (Lightning does)
        return cat.FSDP_ORIG, placement.orig_params_kw
    return kind, ""


def _keyword_unknown(call: cst.Call, keyword: str) -> bool:
    """The keyword is set to something other than a literal, or may come from a `**` splat."""
    for arg in call.args:
        if arg.star == "**" and not isinstance(arg.value, cst.Dict):
            return True
        if arg.keyword is not None and arg.keyword.value == keyword:
            return not (isinstance(arg.value, cst.Name) and arg.value.value in ("True", "False", "None"))
    return False


def _keyword_given(call: cst.Call, keyword: str) -> bool:
    return any(
        arg.keyword is not None and arg.keyword.value == keyword and not (isinstance(arg.value, cst.Name) and arg.value.value == "None")
        for arg in call.args
    )


def _expression_children(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """The direct sub-expressions of a node, looking through Arg/Element/CompFor wrappers.

    Reads the node's fields directly: LibCST's `children` rebuilds nodes and costs as much as the parse.
    """
    for name in node_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield from _expressions_in(value)
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    yield from _expressions_in(item)


def _expressions_in(child: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    if isinstance(child, cst.Arg):
        yield child.value
    elif isinstance(child, cst.Lambda):
        return
    elif isinstance(child, cst.BaseExpression):
        yield child
    elif not isinstance(child, _NOT_EXPRESSIONS):
        yield from _expression_children(child)


_NOT_EXPRESSIONS = (
    cst.BaseParenthesizableWhitespace, cst.BaseSuite, cst.LeftParen, cst.RightParen, cst.Comma, cst.Dot,
    cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.AssignEqual, cst.Colon,
    cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Semicolon,
)


def _classify_method_placement(method: str, placement: cat.Placement, call: cst.Call, args) -> Tuple[Optional[str], str, str]:
    """The catalog's argument rules, given the call's argument texts."""
    arguments = [(arg.keyword.value if arg.keyword is not None else None, _plain_text(arg.value), value.xla)
                 for arg, value in args]
    return cat.classify_method_placement(method, placement, arguments)


def _is_cpu_device(node: Optional[cst.BaseExpression]) -> bool:
    if isinstance(node, cst.SimpleString):
        return node.value.strip("'\"") == cat.CPU
    if isinstance(node, cst.Call) and dotted_name(node.func) in cat.DEVICE_CONSTRUCTORS and len(node.args) == 1:
        return _is_cpu_device(node.args[0].value)
    return False


def _absence_test(test: cst.BaseExpression) -> Tuple[bool, Optional[str]]:
    """(True, `x`) for `x is None` and `not x`; (False, `x`) for `x is not None` and a bare `x`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        absent, subject = _absence_test(test.expression)
        return not absent, subject
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
            if isinstance(target.operator, cst.Is):
                return True, dotted_name(test.left)
            if isinstance(target.operator, cst.IsNot):
                return False, dotted_name(test.left)
        return False, None
    return False, dotted_name(test)


def _ends_in_raise(body: cst.BaseSuite) -> bool:
    last = body.body[-1] if body.body else None
    if isinstance(body, cst.SimpleStatementSuite):
        return isinstance(last, cst.Raise)
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Raise)


def _dotted_names(node: cst.CSTNode) -> Iterator[str]:
    """Every name and attribute chain read in an expression (`self.optimizer` in `self.optimizer is
    not None`), outermost chains only."""
    dotted = dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
    if dotted is not None:
        yield dotted
        return
    for child in _expression_children(node):
        yield from _dotted_names(child)


def _plain_text(node: cst.BaseExpression) -> str:
    dotted = dotted_name(node)
    if dotted is not None:
        return dotted
    if isinstance(node, cst.SimpleString):
        return node.value
    return cst.Module(body=[]).code_for_node(node)
