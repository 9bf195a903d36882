"""Walks one scope's statements along every path and records holder, placement and state events.

The walker follows values, not types: a name becomes a model handle when parameters are taken from
it, aliases (`model = model.to(d)`, `ddp = DDP(model)`, `self.model = model`) share one object id,
and rebinding to a new object gives a new id, which ends the old handle.

`ScopeWalker` is assembled from its layers, each its own module: the paths (analysis/flow.py), names
and expressions (analysis/bindings.py), holders (analysis/holders.py), what calls do
(analysis/effects.py) and project calls replayed from their summaries (analysis/replay.py), over the
abstract objects of analysis/heap.py. This module keeps the walker's state and its entry points.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from itertools import count
from typing import Callable, Dict, FrozenSet, List, Optional, Tuple

import libcst as cst

from .. import catalog as cat
from .kwargs import read_kwargs
from .context import Decidable, decidable_parameters, is_static
from .events import Guard, Handle, HolderEvent, PlacementEvent, ScopeEvents, Site
from .blocks import suite_body
from .names import ImportTable, dotted_name, plain_text
from .uses import OptimizerUses
from .aliases import Alias
from .heap import STAR, Arm, Binding, Env, ModuleTables, Origin, Value
from .summary import CallFact, Handling, HelperSummary, Instance
from .flow import PathWalker, Loop, collect_bound
from .bindings import BindingWalker
from .holders import HolderWalker, body_names, has_string_default, pairs_with_a_module
from .effects import EffectWalker
from .replay import SummaryReplay


class ScopeWalker(PathWalker, BindingWalker, HolderWalker, EffectWalker, SummaryReplay):
    """Produces the events of one scope. One instance per scope; `ids` is shared per file."""

    # `**kwargs` (analysis/kwargs.py): its name, the keys read out of it, and what each holds; set by
    # `bind_parameters` (`_bind_kwargs`), read only once a name is set
    _kwargs_name: Optional[str] = None
    kwargs_keys: Tuple[str, ...] = ()
    _kwargs: Dict[str, Binding] = {}
    # What else reads its keys: the keywords the calls it is spread into take (`super().__init__(**kwargs)`)
    # by the id of each call, None for one whose summary is unknown; None when the body does anything
    # else with the name (see HelperSummary.keywords)
    kwargs_spread: Optional[Dict[int, Optional[FrozenSet[str]]]] = None
    # The callables its callers hand the parameters it calls (`opt_fn=torch.optim.Adam`): (the key of the
    # function they are for, parameter -> the holder kind the callable builds); see module._handed_makers
    makers: Tuple[Tuple[str, str], Dict[str, str]] = (("", ""), {})
    # The parameters a call of this file hands what unpickling made, by the (path, name) key of the
    # method or function they are for; see module._walk_again_with_unpickled
    unpickled_params: Dict[Tuple[str, str], FrozenSet[str]] = {}
    # Dicts filled by constant keys here (`kwargs["model"] = model`, `dict(model=model)`): what each key
    # holds, by the dict's name; a call that spreads one (`super().__init__(**kwargs)`) passes them
    # as keywords. Replaced, never changed in place (the class's empty one is shared).
    _entries: Dict[str, Dict[str, Value]] = {}
    # A generic alias by the name an annotation uses (analysis/aliases.py): this module's, or one its
    # imports bring from the project; set by analyze_module
    type_alias: Optional[Callable[[str], Optional[Alias]]] = None
    # Walking a base's method for a subclass that overrides some of the methods it calls: the
    # subclass's name and those methods, so messages name the override that runs (`Gpu.prepare()`).
    dispatching: Optional[Tuple[str, FrozenSet[str]]] = None
    # A class's own scope (not a summary's walk): what `super().__init__(model)` kept is bound there.
    binds_base_kept: bool = False

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
        self.path, self.imports, self.catalog = path, imports, catalog
        self.helpers, self.method_helpers = helpers, method_helpers
        self.constructors = constructors if constructors is not None else {}
        self.ids, self.overwrite_flag = ids, overwrite_flag
        self.env: Env = {}
        self.origins: Dict[int, Origin] = {}
        # each `return`'s value, whether it is a module made here, what a class call made it from (see
        # _made_by_class), the names bound to a module made here, the functions defined in the walked one
        self.returns, self.returned_new, self.returned_fresh, self._new_module_names, self._local_functions = [], [], [], set(), {}
        # `step()` / `load_state_dict()` for its callers (see HelperSummary's three lists of them)
        self.state_calls, self.kept_states, self.argument_state_calls = [], [], []
        # Objects built here from a summarised class: the new object's id -> (its methods, what its
        # attributes hold: `self.model` -> the caller's model, the holders handed to its constructor)
        self._instances: Dict[int, Instance] = {}
        self._built: Dict[int, Instance] = {}  # by the constructor call, until a name takes the object
        self._args_from = 0  # where the current call's argument events start in scope.events
        self.order = count()
        self.self_calls: set = set()  # `self.method()` calls seen: the methods `__init__` runs itself
        self.regroups = False  # an `add_param_group` call was seen (see HelperSummary.regroups)
        self.handled: List[Handling] = []  # see HelperSummary.handled
        self.tested: set = set()  # the names `if` tests read (see HelperSummary.tests)
        self.context: Dict[str, bool] = {}  # what the call this summary is for decides (analysis/context.py)
        self._rebound: set = set()
        self.arguments: Decidable = {}  # every parameter, as a call may decide it (see HelperSummary.arguments)
        self.decidable, self.declared_modules = {}, frozenset()  # see HelperSummary (Decidable, FrozenSet[str])
        self.arrival_key: Optional[Tuple[str, str]] = None  # this function's key for its callers, when reported
        self.syncs_self_optimizers = False  # see HelperSummary.syncs_self_optimizers
        self._arrivals: Tuple[HolderEvent, ...] = ()  # optimizers this function was handed (callee side)
        # Calls of the project's functions and classes seen here (summary.CallFact), for their callee side:
        # did every caller place the model before handing it over, what did it place on what they built?
        self.calls: List[CallFact] = []
        self._built_by: Dict[int, CallFact] = {}  # an object a constructor call built: that call's fact
        self._free: Dict[str, Handle] = {}  # names never bound here: one object wherever they are read
        # ids (and attributes, by handle key) from literals, never modules; tensors trained alone; moved here; made by a class call
        self._data, self._leaves, self._moved, self._class_built = set(), set(), set(), set()
        self._earlier_places: set = set()  # device values read before a move of their object (see _forget_place)
        self._chain: Tuple[cst.CSTNode, ...] = ()
        self._name_counts: Dict[int, Counter] = {}  # see BindingMixin._never_read
        self._branches: Tuple[Arm, ...] = ()
        # Flags the function computes on its straight-line path (`use_ddp = ws > 1 and not args.fp16`):
        # a condition on them means their definition (see Guard.facts); any later assignment forgets one.
        self._definitions: Dict[str, cst.BaseExpression] = {}
        # Nested functions registered to run when an object runs: its name -> them, in order.
        self._handlers: Dict[str, List[cst.FunctionDef]] = {}
        self._running, self._running_via = set(), None  # handlers walked now; `trainer.run()` meanwhile
        # Methods called on objects built here, in order: (class, earlier method, later method), shared
        # by the walkers of a file (see ScopeEvents.ordered).
        self.method_orders: set = set()
        self._instance_calls: Dict[int, List[str]] = {}
        # Module-level names bound to this file's classes or tables of them (`PLACERS = {...}`).
        self.module_tables = ModuleTables()
        self._guards: Tuple[Guard, ...] = ()
        self._loops: List[Loop] = []
        self._alive, self._ended_by_loop_exit = True, False
        # What `super().__init__(...)` kept of this function's objects in the base's attributes.
        self.base_kept: Dict[str, Tuple[Handle, ...]] = {}
        self._dead: FrozenSet[Arm] = frozenset()
        self._silent = 0  # > 0 while a loop body is walked once only for its bindings
        self._synced, self._manager_context = 0, None  # inside `with <re-points optimizers>()` / `torch.device(x)`
        self._writes: List[set] = []  # names bound in each enclosing branch arm, innermost last
        self._in_test = 0  # > 0 while the condition of an `if` or `while` is evaluated
        self._current_node: cst.CSTNode = cst.Pass()
        self._anchor, self._inherited_from = None, ""  # where replay_inherited's events stand, and whose method
        # The file's use keys of what it uses as optimizers (analysis/uses.py), computed on first need.
        self.optimizer_uses: Optional[Callable[[], OptimizerUses]] = None

    def bind_parameters(self, function: cst.FunctionDef, is_method: bool,
                        arrival: Optional[Tuple[str, Tuple[str, str]]] = None) -> Tuple[str, ...]:
        """Give each parameter its own object; a method's `self` is not counted among the arguments.

        `arrival` (the function's label and its (path, name) key) asks for the callee side: an
        optimizer parameter handed in with a model parameter is a holder of that model, built before
        the function runs (only for the scopes whose findings are reported, never for summaries)."""
        names = []
        is_method = is_method and not is_static(function)  # a static method takes no object: its first is an argument
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
            self.scope.arrived.add(handle.obj)
            default = dotted_name(param.default) if param.default is not None else None
            # `placer_class=DevicePlacer`, `optim_cls=torch.optim.Adam`: the class unless a caller passes another
            self._assign(name, Binding(handle, callables=self._defined_callables(default) if default else frozenset(),
                                       makes=self._eval(param.default).makes if default else None))
            bound.append((param, handle))
        star = function.params.star_arg
        if isinstance(star, cst.Param):  # `def to_device(device, *args)`: the arguments from here on
            handle = Handle(next(self.ids), (), star.name.value)
            self.origins[handle.obj] = Origin(STAR, star.name.value, len(params))
            self._assign(star.name.value, Binding(handle))
        pseudo = self._bind_kwargs(function)
        self.declared_modules = _declared_modules(self, bound, function)
        if arrival is not None:
            self.arrival_key = arrival[1]
            if arrival[1] == self.makers[0]:
                for name, kind in self.makers[1].items():
                    if name in self.env:
                        self.env[name] = dataclasses.replace(self.env[name], makes=kind)  # what the callers hand
            for name in self.unpickled_params.get(arrival[1], ()):
                if name in self.env:
                    self.env[name] = dataclasses.replace(self.env[name], unpickled=True)  # what a caller hands
            self._optimizers_arrive(function, bound + pseudo, *arrival, is_method=is_method)
            for param, handle in pseudo:
                # the key's holder lives under the key, not under a local name that it happens to spell
                key = param.name.value
                arrived = self.env.get(key)
                if arrived is not None and arrived.handle is handle:
                    self._kwargs[key] = arrived
                    self.env.pop(key)
        rebound: set = set()
        collect_bound(function.body, rebound)
        self.decidable = decidable_parameters(function, is_method, rebound)
        self.arguments = decidable_parameters(function, is_method, ())
        self._rebound = set()
        return tuple(names)

    def _bind_kwargs(self, function: cst.FunctionDef) -> List[Tuple[cst.Param, Handle]]:
        """Each constant key the body reads out of `**kwargs` is an argument of that name (see
        analysis/kwargs.py); those neither called nor spread may be an optimizer that arrives built."""
        self._kwargs, self.kwargs_keys, self._kwargs_name, self.kwargs_spread = {}, (), None, None
        star = function.params.star_kwarg
        if not isinstance(star, cst.Param):
            return []
        self._kwargs_name = star.name.value
        uses, spreads = read_kwargs(function, self._kwargs_name)
        self.kwargs_spread = {id(call): None for call in spreads} if spreads is not None else None
        whole = Handle(next(self.ids), (), self._kwargs_name)
        self.origins[whole.obj] = Origin("param", self._kwargs_name, 1 << 30)
        self._assign(self._kwargs_name, Binding(whole))
        pseudo = []
        self.kwargs_keys = tuple(uses)
        for key, use in uses.items():
            handle = Handle(next(self.ids), (), f'{self._kwargs_name}["{key}"]')
            self.origins[handle.obj] = Origin("param", key, 1 << 30)
            self._kwargs[key] = Binding(handle)
            if not (use.called or use.spread) or not cat.receives_optimizer(key):
                pseudo.append((cst.Param(cst.Name(key)), handle))  # a called module is a forward pass
        return pseudo

    def replay_inherited(self, klass: cst.ClassDef, name: str) -> None:
        """A method the class inherits and does not define (`BaseModel.to(device)` moving `self.model`):
        its users call it on a built object, after the constructor, as they would a method of the class's
        own. Only one that places the object's own modules. Its events stand at the class's name, in no
        method of the class (the statements are the base's, shown there too), and no caller is counted
        for the base's callee side."""
        lookup = getattr(self.method_helpers, "inherited", None)
        summary = lookup(name) if lookup is not None else None
        if summary is None or not any(placed.origin.kind == "self" for placed in summary.placements):
            return
        self.forget_locals()
        call = cst.Call(func=cst.Attribute(value=cst.Name("self"), attr=cst.Name(name)))
        base = summary.key[1].rpartition(".")[0] if summary.key else ""
        saved = (self._chain, self._anchor, self.calls, self._inherited_from)
        self._chain, self._anchor, self.calls, self._inherited_from = (), klass.name, [], base or "a base class"
        try:
            self._helper_effect(call, f"self.{name}", [], inherited=True)
        finally:
            self._chain, self._anchor, self.calls, self._inherited_from = saved

    def forget_locals(self) -> None:
        """A class's methods share `self.*` but not their local names."""
        self.env = {key: value for key, value in self.env.items() if key == "self" or key.startswith("self.")}
        self._definitions, self._optimizer_configs = {}, frozenset()

    def _site(self, node: cst.CSTNode, via: Optional[str] = None) -> Site:
        return Site(next(self.order), self._anchor or node, self._chain, self._branches, self._guards, len(self._loops),
                    via or self._running_via, self._dead, handler=self._running_via)

    def _emit(self, event: object) -> None:
        if not self._silent:
            if self._synced and isinstance(event, PlacementEvent):
                event = dataclasses.replace(event, synced=True)
            self.scope.events.append(event)
            if isinstance(event, PlacementEvent) and event.handle.obj in self._built_by:
                self._built_by[event.handle.obj].after.append(event)
        if isinstance(event, PlacementEvent) and event.kind in (cat.MOVE, cat.REPLACE):
            self._forget_place(event.handle.obj)

    def note_kept_objects(self, key: Tuple[str, str], kept: Dict[int, Tuple[str, ...]]) -> None:
        """At the end of a class's `__init__` (its key): the objects its constructor calls built that it
        keeps, under which attribute (see CallFact.kept_as)."""
        for obj, path in kept.items():
            if obj in self._built_by:
                self._built_by[obj].kept_as.append((key, path))

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
            alive, returns, new, via = self._alive, list(self.returns), list(self.returned_new), self._running_via
            fresh = list(self.returned_fresh)
            self._running_via = f"{handler.name.value}() run by {owner}.{method}()"
            try:
                self._walk_block(suite_body(handler.body))
            finally:
                self._running.discard(id(handler))
                self._alive, self.returns, self.returned_new, self._running_via = alive, returns, new, via
                self.returned_fresh = fresh

    def _note_definition(self, statement: cst.CSTNode) -> None:
        """A nested function registered as a handler (`@trainer.on(...)`) runs when its object runs; any
        other is a helper its name calls from here on."""
        owner = _handler_owner(statement) if isinstance(statement, cst.FunctionDef) else None
        if owner is not None:
            self._handlers.setdefault(owner, []).append(statement)
        elif isinstance(statement, cst.FunctionDef) and self._function is not None:
            self._local_functions[statement.name.value] = statement

    @property
    def _function(self) -> Optional[cst.FunctionDef]:
        """The function whose body is being walked (as `Site.function` says of a site); None outside one."""
        root = self._chain[0] if self._chain else None
        return root if isinstance(root, cst.FunctionDef) else None

    def _nested_functions(self) -> List[cst.FunctionDef]:
        root = self._function
        body = suite_body(root.body) if root is not None else ()
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
            if defines is not None and defines(method):
                return True
            # a base of the project defines it (`BaseModel.compile()` in another module): the class's
            # own method, not torch's `Module.compile()` (asked only of names the catalog would take; the
            # summary found is the one the call then replays, computed once)
            return method in cat.METHOD_PLACEMENTS and self.method_helpers.get(method) is not None
        instance = self._instances.get(receiver.handle.obj) if receiver.handle is not None else None
        return instance is not None and instance.methods(method) is not None

    def _returns_nothing(self, dotted: str) -> bool:
        """`self.m` where the class defines `m` with a body of its own that returns no value."""
        lookup = getattr(self.method_helpers, "returns_nothing", None)
        return dotted.startswith("self.") and lookup is not None and lookup(dotted[5:])

    def _instance_of(self, name: str):
        """The class summary and attributes of the object a plain name holds, if it was built here."""
        binding = self.env.get(name)
        return self._instances.get(binding.handle.obj) if binding is not None else None


def _handler_owner(function: cst.FunctionDef) -> Optional[str]:
    """`@trainer.on(Events.STARTED)` above a nested function: `trainer`."""
    for decorator in function.decorators:
        node = decorator.decorator
        func = node.func if isinstance(node, cst.Call) else node
        if isinstance(func, cst.Attribute) and func.attr.value in cat.HANDLER_REGISTRATIONS:
            return dotted_name(func.value)
    return None


def _declared_modules(walker: "ScopeWalker", bound, function: cst.FunctionDef) -> FrozenSet[str]:
    """The parameters declared as modules (see HelperSummary.declared_modules), of a function that takes
    an optimizer too: only there does a callee pair a handed optimizer with a module it takes. Where no
    name says which parameter is the model, the one the file's uses train with it (types from use)."""
    optimizers = [(param.name.value, handle) for param, handle in bound
                  if cat.receives_optimizer(param.name.value, string_default=has_string_default(param))]
    if not optimizers:
        return frozenset()
    declared = frozenset(param.name.value for param, _ in bound if param.annotation is not None
                         and walker._annotated_module_class(plain_text(param.annotation.annotation)))
    if declared or pairs_with_a_module([param.name.value for param, _ in bound]):
        return declared
    trained = {handle.obj for handle in walker._trained_parameters(bound, optimizers, body_names(function).kept_as)}
    return frozenset(param.name.value for param, handle in bound if handle.obj in trained)
