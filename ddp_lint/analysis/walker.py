"""Walks one scope's statements in execution order and records holder, placement and state events.

The walker follows values, not types: a name becomes a model handle when parameters are taken from
it, aliases (`model = model.to(d)`, `ddp = DDP(model)`, `self.model = model`) share one object id,
and rebinding to a new object gives a new id, which ends the old handle.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import count
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from .. import catalog as cat
from .events import (
    DiscardedWrapperEvent,
    ForwardEvent,
    Handle,
    HolderEvent,
    ManagedEvent,
    PlacementEvent,
    RebindEvent,
    ScopeEvents,
    Site,
    StateEvent,
)
from .names import ImportTable, dotted_name

# Among several arguments of an optimizer factory, these name the module; the others are settings.
_MODEL_NAME = re.compile(r"model|net|module|encoder|decoder|backbone", re.IGNORECASE)
# An unknown call whose name says it collects parameters (`get_param_groups(model, wd)`).
_PARAM_COLLECTOR = re.compile(r"param|group|decay", re.IGNORECASE)


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


@dataclass
class Binding:
    handle: Handle
    params: FrozenSet[Handle] = frozenset()
    holder: Optional[HolderEvent] = None
    xla: bool = False
    cpu: bool = False  # `device = torch.device("cpu")`: moving there is a no-op


@dataclass
class Value:
    handle: Optional[Handle] = None
    params: FrozenSet[Handle] = frozenset()
    holder: Optional[HolderEvent] = None
    xla: bool = False
    copy_of: Optional[Handle] = None  # `copy.deepcopy(x)`
    # Placements applied to a new object before it has a name (`model = Net().to(device)`).
    pending: Tuple[PlacementEvent, ...] = ()


_EMPTY = Value()


class ScopeWalker:
    """Produces the events of one scope. One instance per scope; `ids` is shared per file."""

    def __init__(
        self,
        name: str,
        imports: ImportTable,
        catalog: cat.Catalog,
        helpers: Dict[str, HelperSummary],
        method_helpers: Dict[str, HelperSummary],
        ids: "count[int]",
        overwrite_flag: bool,
    ) -> None:
        self.scope = ScopeEvents(name)
        self.imports = imports
        self.catalog = catalog
        self.helpers = helpers
        self.method_helpers = method_helpers
        self.ids = ids
        self.overwrite_flag = overwrite_flag
        self.env: Dict[str, Binding] = {}
        self.origins: Dict[int, Origin] = {}
        self.returns: List[Value] = []
        self.state_calls: List[Tuple[str, str]] = []
        self.order = count()
        self._chain: Tuple[cst.CSTNode, ...] = ()
        self._branches: Tuple[Tuple[int, int], ...] = ()
        self._guards: Tuple[cst.BaseExpression, ...] = ()
        self._loops = 0
        self._current_node: cst.CSTNode = cst.Pass()

    # ----- entry points -------------------------------------------------------------------------
    def bind_parameters(self, function: cst.FunctionDef, is_method: bool) -> Tuple[str, ...]:
        """Give each parameter its own object; a method's `self` is not counted among the arguments."""
        names = []
        params = list(function.params.posonly_params + function.params.params)
        if is_method and params:
            params = params[1:]
        for index, param in enumerate(params + list(function.params.kwonly_params)):
            if index >= len(params):
                index = 1 << 30  # keyword-only: reachable by name, never by position
            name = param.name.value
            names.append(name)
            handle = Handle(next(self.ids), (), name)
            self.origins[handle.obj] = Origin("param", name, index)
            self.env[name] = Binding(handle)
        return tuple(names)

    def walk_body(self, body: Sequence[cst.BaseStatement], root: Tuple[cst.CSTNode, ...] = ()) -> None:
        saved = self._chain
        self._chain = root
        self._walk_block(body)
        self._chain = saved

    def forget_locals(self) -> None:
        """A class's methods share `self.*` but not their local names."""
        self.env = {key: value for key, value in self.env.items() if key == "self" or key.startswith("self.")}

    # ----- statements ---------------------------------------------------------------------------
    def _walk_block(self, body: Sequence[cst.BaseStatement]) -> None:
        for statement in body:
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
                    self._walk_small(small)
            elif isinstance(statement, cst.If):
                self._walk_if(statement)
            elif isinstance(statement, (cst.For,)):
                source = self._eval(statement.iter)
                self._bind_target(statement.target, Value(params=source.params | _handles(source)))
                self._loops += 1
                self._walk_suite(statement.body)
                self._loops -= 1
                if statement.orelse is not None:
                    self._walk_suite(statement.orelse.body)
            elif isinstance(statement, cst.While):
                self._eval(statement.test)
                self._loops += 1
                self._walk_suite(statement.body)
                self._loops -= 1
                if statement.orelse is not None:
                    self._walk_suite(statement.orelse.body)
            elif isinstance(statement, cst.With):
                for item in statement.items:
                    value = self._eval(item.item)
                    if item.asname is not None:
                        self._bind_target(item.asname.name, value)
                self._walk_suite(statement.body)
            elif isinstance(statement, cst.Try):
                self._walk_suite(statement.body)
                for arm, handler in enumerate(statement.handlers, start=1):
                    self._with_branch(statement, arm, None, lambda h=handler: self._walk_suite(h.body))
                if statement.orelse is not None:
                    self._walk_suite(statement.orelse.body)
                if statement.finalbody is not None:
                    self._walk_suite(statement.finalbody.body)
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                pass  # their own scopes; the name now refers to something new
            elif isinstance(statement, cst.Match):
                self._eval(statement.subject)
                for arm, case in enumerate(statement.cases):
                    self._with_branch(statement, arm, None, lambda c=case: self._walk_suite(c.body))
            else:
                body = getattr(statement, "body", None)
                if isinstance(body, cst.BaseSuite):
                    self._walk_suite(body)
        finally:
            self._chain = saved

    def _walk_if(self, statement: cst.If) -> None:
        self._eval(statement.test)
        self._with_branch(statement, 0, statement.test, lambda: self._walk_suite(statement.body))
        orelse = statement.orelse
        if isinstance(orelse, cst.If):
            # An `elif` belongs to the outer `if` statement: it adds no statement to the chain.
            self._with_branch(statement, 1, None, lambda: self._walk_if(orelse))
        elif isinstance(orelse, cst.Else):
            self._with_branch(statement, 1, None, lambda: self._walk_suite(orelse.body))

    def _with_branch(self, node: cst.CSTNode, arm: int, guard: Optional[cst.BaseExpression], walk) -> None:
        saved = (self._branches, self._guards)
        self._branches = self._branches + ((id(node), arm),)
        if guard is not None:
            self._guards = self._guards + (guard,)
        try:
            walk()
        finally:
            self._branches, self._guards = saved

    def _walk_suite(self, suite: cst.BaseSuite) -> None:
        if isinstance(suite, cst.IndentedBlock):
            self._walk_block(suite.body)
        elif isinstance(suite, cst.SimpleStatementSuite):
            for small in suite.body:
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
            if key is not None and key in self.env and value.params:
                binding = self.env[key]
                binding.params = binding.params | value.params
        elif isinstance(small, cst.Expr):
            value = self._eval(small.value)
            self._check_discarded(small.value, value)
        elif isinstance(small, cst.Return):
            if small.value is not None:
                self.returns.append(self._eval(small.value))
        elif isinstance(small, (cst.Import, cst.ImportFrom)):
            self.imports.add(small)
        elif isinstance(small, (cst.Raise, cst.Assert, cst.Del)):
            for child in _expression_children(small):
                self._eval(child)

    # ----- bindings -----------------------------------------------------------------------------
    def _key_of(self, node: cst.BaseExpression) -> Optional[str]:
        dotted = dotted_name(node)
        if dotted is None:
            return None
        parts = dotted.split(".")
        if parts[0] == "self" and len(parts) == 2:
            return dotted
        return dotted if len(parts) == 1 else None

    def _resolve(self, dotted: str) -> Handle:
        parts = dotted.split(".")
        if parts[0] == "self" and len(parts) >= 2:
            key, rest = "self." + parts[1], parts[2:]
        else:
            key, rest = parts[0], parts[1:]
        binding = self.env.get(key)
        if binding is None:
            handle = Handle(next(self.ids), (), key)
            self.origins[handle.obj] = Origin("self" if key.startswith("self.") else "local", key)
            binding = self.env[key] = Binding(handle)
        sub = tuple(part for part in rest if part not in cat.TRANSPARENT_ATTRIBUTES)
        base = binding.handle
        return Handle(base.obj, base.sub + sub, dotted)

    def _bind_target(self, target: cst.BaseExpression, value: Value, value_node: Optional[cst.BaseExpression] = None) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = [element.value for element in target.elements]
            if isinstance(value_node, (cst.Tuple, cst.List)) and len(value_node.elements) == len(elements):
                values = [self._peek(element.value) for element in value_node.elements]
            else:
                # `opt, sched = build(...)`: the first name gets the holder, each gets a new object.
                values = [Value(params=value.params, holder=value.holder if i == 0 else None) for i in range(len(elements))]
            for element, element_value in zip(elements, values):
                self._bind_target(element, element_value)
            return
        if isinstance(target, cst.StarredElement):
            return
        key = self._key_of(target)
        if key is None:
            self._assign_attribute(target, value_node)
            return
        old = self.env.get(key)
        if value.copy_of is not None and old is not None and old.handle.obj == value.copy_of.obj:
            # `model = copy.deepcopy(model)`: the name now means a copy with new parameters.
            self._emit(PlacementEvent(self._site(value_node or target), value.copy_of, cat.REPLACE, "copy.deepcopy()"))
        if old is not None and old.holder is not None and value.holder is not old.holder and value.holder is not None:
            self._emit(RebindEvent(self._site(value_node or target), old.holder, value.holder))
        if value.handle is not None and value.holder is None:
            handle = Handle(value.handle.obj, value.handle.sub, key)
        else:
            handle = Handle(next(self.ids), (), key)
            self.origins[handle.obj] = Origin("local", key)
        for event in value.pending:
            self._emit(dataclasses.replace(event, handle=Handle(handle.obj, (), key)))
        if value.holder is not None and value.holder.var is None:
            value.holder.var = key
        self.env[key] = Binding(handle, value.params, value.holder, value.xla, _is_cpu_device(value_node))

    def _peek(self, node: cst.BaseExpression) -> Value:
        """The value of one element of a tuple already evaluated as a whole (no new events)."""
        dotted = dotted_name(node)
        if dotted is None:
            return _EMPTY
        handle = self._resolve(dotted)
        binding = self.env.get(dotted)
        if binding is not None:
            return Value(handle, binding.params, binding.holder, binding.xla)
        return Value(handle)

    def _assign_attribute(self, target: cst.BaseExpression, value_node: Optional[cst.BaseExpression]) -> None:
        dotted = dotted_name(target)
        if dotted is None or not isinstance(value_node, cst.Call):
            return
        callee = dotted_name(value_node.func)
        if callee is None:
            return
        qualified = self.imports.qualify(callee)
        terminal = qualified.rsplit(".", 1)[-1]
        if (qualified.startswith("torch.nn.") or callee.startswith("nn.")) and terminal[:1].isupper():
            handle = self._resolve(dotted)
            if handle.sub:
                label = f"submodule reassignment `{dotted} = {callee}(...)`"
                self._emit(PlacementEvent(self._site(target), handle, cat.REPLACE, label))

    # ----- expressions --------------------------------------------------------------------------
    def _eval(self, node: cst.BaseExpression) -> Value:
        if isinstance(node, (cst.Name, cst.Attribute)):
            dotted = dotted_name(node)
            if dotted is not None:
                if self.imports.binds(dotted.split(".", 1)[0]) and dotted.split(".", 1)[0] not in self.env:
                    return _EMPTY
                handle = self._resolve(dotted)
                binding = self.env.get(dotted) if "." not in dotted or dotted.startswith("self.") else None
                if binding is not None and dotted.count(".") <= 1:
                    return Value(handle, binding.params, binding.holder, binding.xla)
                return Value(handle)
            if isinstance(node, cst.Attribute):
                inner = self._eval(node.value)
                return Value(params=inner.params)
        if isinstance(node, cst.Call):
            return self._eval_call(node)
        if isinstance(node, (cst.Lambda,)):
            return _EMPTY  # deferred code: its effects do not happen here
        params: FrozenSet[Handle] = frozenset()
        xla = False
        for child in _expression_children(node):
            value = self._eval(child)
            params = params | value.params
            xla = xla or value.xla
        if isinstance(node, cst.SimpleString) and any(m in node.value.lower() for m in cat.REPLACING_DEVICE_MARKERS):
            xla = True
        return Value(params=params, xla=xla)

    def _eval_call(self, call: cst.Call) -> Value:
        func = call.func
        dotted = dotted_name(func)
        receiver: Value = _EMPTY
        method: Optional[str] = None
        library_call = False
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            root = dotted.split(".", 1)[0] if dotted else None
            library_call = root is not None and self.imports.binds(root) and root not in self.env
            if not library_call:
                receiver = self._eval(func.value)
        elif not isinstance(func, cst.Name):
            self._eval(func)
        args = [(arg, self._eval(arg.value)) for arg in call.args]
        if dotted is not None and dotted in self.env and self.env[dotted].holder is None and not library_call:
            self._emit(ForwardEvent(self._site(call), self.env[dotted].handle))
        self._training_handoff(call, dotted, args)
        qualified = self.imports.qualify(dotted) if dotted else ""
        xla = "xla_device" in qualified or any(value.xla for _, value in args)

        if qualified:
            result = self._library_effect(call, qualified, args, library_call or method is None)
            if result is not None:
                return result
        if method is not None and not library_call:
            result = self._method_effect(call, method, receiver, args)
            if result is not None:
                return result
        if dotted:
            result = self._helper_effect(call, dotted, args)
            if result is not None:
                return result
            result = self._generic_holder(call, dotted, receiver, args)
            if result is not None:
                return result
        params = receiver.params.union(*(value.params for _, value in args))
        if dotted and _PARAM_COLLECTOR.search(dotted.rsplit(".", 1)[-1]):
            params = params.union(*(_handles(value) for _, value in args))
            if receiver.handle is not None:
                params = params | {receiver.handle}
        return Value(params=params, xla=xla)

    def _training_handoff(self, call: cst.Call, dotted: Optional[str], args) -> None:
        """`train(model, optimizer)`: a call handed a bare module together with an optimizer trains
        through that module (a call handed only the module may just log or save it). Calls that
        manage the pair themselves (`accelerator.prepare`) are not training."""
        if not any(value.holder is not None for _, value in args):
            return
        if dotted is not None and self.catalog.is_managed(self.imports.qualify(dotted) or dotted):
            return
        for arg, value in args:
            name = dotted_name(arg.value)
            if value.holder is None and value.handle is not None and name is not None and name in self.env:
                self._emit(ForwardEvent(self._site(call), value.handle))

    def _library_effect(self, call: cst.Call, qualified: str, args, is_function: bool) -> Optional[Value]:
        kind = self.catalog.holder_kind(qualified) if is_function or "." in qualified else None
        if kind is not None and is_function:
            return self._holder(call, kind, qualified.rsplit(".", 1)[-1], args)
        if qualified in ("copy.deepcopy",) and args:
            return Value(copy_of=args[0][1].handle)
        if is_function and self.catalog.is_managed(qualified) and "." in qualified:
            held = tuple(value.holder for _, value in args if value.holder is not None)
            if held:
                self._emit(ManagedEvent(self._site(call), held, qualified))
                return Value()
        placement = self.catalog.call_placement(qualified) if is_function else None
        if placement is not None and args and args[0][1].handle is not None:
            handle = args[0][1].handle
            kind = placement.kind
            if placement.inplace_kw and _keyword_is_true(call, placement.inplace_kw):
                kind = cat.WRAP
            if placement.orig_params_kw and _keyword_is_true(call, placement.orig_params_kw):
                kind = cat.FSDP_ORIG
            self._emit(
                PlacementEvent(self._site(call), handle, kind, placement.label, placement.sync_wrapper, placement.ddp,
                               operation=placement.label)
            )
            return Value(handle=handle)
        return None

    def _method_effect(self, call: cst.Call, method: str, receiver: Value, args) -> Optional[Value]:
        handle = receiver.handle
        if handle is None and method in cat.METHOD_PLACEMENTS and not receiver.holder:
            kind, label, argument = _classify_method_placement(method, cat.METHOD_PLACEMENTS[method], call, args)
            if kind is None:
                return Value(pending=receiver.pending)
            placeholder = Handle(-1, (), "")
            event = PlacementEvent(self._site(call), placeholder, kind, label, argument_text=argument, operation=method)
            return Value(pending=receiver.pending + (event,))
        if method in cat.STATE_METHODS and receiver.holder is not None:
            self._emit(StateEvent(self._site(call), receiver.holder, method))
            return _EMPTY
        if method in cat.STATE_METHODS and handle is not None and handle.text.startswith("self.") and not handle.sub:
            self.state_calls.append((handle.text, method))  # a method's effect on `self.optimizer`, for its callers
        if handle is None:
            return None
        if method in cat.COLLECTING_METHODS:
            collected = frozenset().union(*(value.params | _handles(value) for _, value in args)) if args else frozenset()
            key = handle.text
            if key in self.env and collected and not handle.sub:
                binding = self.env[key]
                binding.params = binding.params | collected
            return _EMPTY
        if method in cat.PARAMETER_METHODS:
            return Value(params=frozenset({handle}))
        if method == "load_state_dict" and _keyword_is_true(call, "assign"):
            self._emit(PlacementEvent(self._site(call), handle, cat.REPLACE, ".load_state_dict(..., assign=True)"))
            return _EMPTY
        placement = cat.METHOD_PLACEMENTS.get(method)
        if placement is not None and method == "float" and self._undo_cast(call):
            return Value(handle=handle)  # `model.half().float()`: a round trip that leaves float32
        if placement is not None:
            kind, label, argument = _classify_method_placement(method, placement, call, args)
            if kind == cat.MOVE and method == "to" and self._all_cpu(call):
                kind = None
            if kind is not None:
                if self.overwrite_flag and kind in (cat.MOVE, cat.CAST):
                    kind, label = cat.REPLACE, f"{label} under set_overwrite_module_params_on_conversion(True)"
                self._emit(PlacementEvent(self._site(call), handle, kind, label, argument_text=argument, operation=method))
            return Value(handle=handle)
        if method in cat.SELF_RETURNING_METHODS:
            return Value(handle=handle)
        return None

    def _all_cpu(self, call: cst.Call) -> bool:
        """`.to(device)` where every device-like argument is a name bound to the CPU in this scope."""
        names = [dotted_name(arg.value) for arg in call.args if arg.keyword is None or arg.keyword.value == "device"]
        bindings = [self.env.get(name) if name else None for name in names]
        return bool(bindings) and all(b is not None and b.cpu for b in bindings)

    def _undo_cast(self, call: cst.Call) -> bool:
        inner = call.func.value if isinstance(call.func, cst.Attribute) else None
        events = self.scope.events
        if events and isinstance(events[-1], PlacementEvent) and events[-1].site.node is inner and events[-1].kind == cat.CAST:
            events.pop()
            return True
        return False

    def _helper_effect(self, call: cst.Call, dotted: str, args) -> Optional[Value]:
        summary = None
        if "." not in dotted:
            summary = self.helpers.get(dotted)
        elif dotted.startswith("self.") and dotted.count(".") == 1:
            summary = self.method_helpers.get(dotted[5:])
        if summary is None:
            return None
        positional = [value for arg, value in args if arg.keyword is None and arg.star == ""]
        keywords = {arg.keyword.value: value for arg, value in args if arg.keyword is not None}

        def actual(origin: Origin, sub: Tuple[str, ...]) -> Optional[Handle]:
            if origin.kind == "param":
                value = positional[origin.index] if origin.index < len(positional) else keywords.get(origin.key)
                if value is None or value.handle is None:
                    return None
                return Handle(value.handle.obj, value.handle.sub + sub, value.handle.text)
            if origin.kind == "self" and dotted.startswith("self."):
                base = self._resolve(origin.key)
                return Handle(base.obj, base.sub + sub, origin.key)
            return None

        via = f"{summary.name}()"
        if dotted.startswith("self."):
            for key, method in summary.state_calls:
                binding = self.env.get(key)
                if binding is not None and binding.holder is not None:
                    self._emit(StateEvent(self._site(call, via=via), binding.holder, method))
        for origin, sub, event in summary.placements:
            handle = actual(origin, sub)
            if handle is not None:
                site = self._site(call, via=via)
                self._emit(
                    PlacementEvent(site, handle, event.kind, event.label, event.sync_wrapper, event.ddp, event.argument_text,
                                   event.operation)
                )
        if summary.holder is not None:
            kind, label, models, bucket_view = summary.holder
            handles = frozenset(h for h in (actual(o, s) for o, s in models) if h is not None)
            if handles:
                event = HolderEvent(self._site(call), kind, f"{summary.name}()", handles, bucket_view=bucket_view)
                self._emit(event)
                return Value(holder=event)
        if summary.returns_param is not None and summary.returns_param < len(positional):
            return Value(handle=positional[summary.returns_param].handle)
        return None  # nothing known about the result: the generic rules still apply (an abstract stub)

    def _generic_holder(self, call: cst.Call, dotted: str, receiver: Value, args) -> Optional[Value]:
        terminal = dotted.rsplit(".", 1)[-1]
        if not cat.is_generic_holder_name(terminal):
            qualified = self.imports.qualify(dotted)
            if qualified not in self.catalog.holders:
                return None
            return self._holder(call, self.catalog.holders[qualified], terminal, args)
        if any(value.holder is not None for _, value in args) and self.catalog.is_managed(dotted):
            return None
        return self._holder(call, cat.FACTORY, f"{terminal}()", args, receiver)

    def _holder(self, call: cst.Call, kind: str, label: str, args, receiver: Value = _EMPTY) -> Optional[Value]:
        models = set()
        passed = set()
        for arg, value in args:
            models.update(value.params)
            if kind in (cat.FACTORY, cat.EMA) and arg.keyword is None and value.handle is not None and value.holder is None:
                if value.handle.text.count(".") == 0 or (value.handle.text.startswith("self.") and value.handle.text.count(".") == 1):
                    passed.add(value.handle)  # `cfg.optimizer`, `args.lr` are settings, not modules
        modelish = {h for h in passed if _MODEL_NAME.search(h.text)}
        models.update(modelish or passed)
        if receiver.handle is not None and receiver.holder is None and kind == cat.FACTORY:
            # `model.configure_optimizers(...)`: the receiver is the model. A trainer's `self` is only the
            # model when nothing else was passed (a LightningModule calling its own factory).
            if receiver.handle.text != "self" or not models:
                models.add(receiver.handle)
        models = {m for m in models if not self._is_holder_handle(m)}
        if not models:
            return Value()
        event = HolderEvent(
            self._site(call), kind, label, frozenset(models), bucket_view=_keyword_is_true(call, "parameters_as_bucket_view")
        )
        self._emit(event)
        return Value(holder=event)

    def _is_holder_handle(self, handle: Handle) -> bool:
        binding = self.env.get(handle.text)
        return binding is not None and binding.holder is not None

    def _check_discarded(self, node: cst.BaseExpression, value: Value) -> None:
        if not isinstance(node, cst.Call):
            return
        dotted = dotted_name(node.func)
        if not dotted:
            return
        placement = self.catalog.call_placement(self.imports.qualify(dotted))
        if placement is not None and placement.sync_wrapper:
            self._emit(DiscardedWrapperEvent(self._site(node), value.handle, placement.label))

    # ----- bookkeeping --------------------------------------------------------------------------
    def _site(self, node: cst.CSTNode, via: Optional[str] = None) -> Site:
        return Site(next(self.order), node, self._chain, self._branches, self._guards, self._loops, via)

    def _emit(self, event: object) -> None:
        self.scope.events.append(event)


def _handles(value: Value) -> FrozenSet[Handle]:
    return frozenset({value.handle}) if value.handle is not None else frozenset()


def _keyword_is_true(call: cst.Call, keyword: str) -> bool:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return False


def _expression_children(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """The direct sub-expressions of a node, looking through Arg/Element/CompFor wrappers.

    Reads the node's fields directly: LibCST's `children` rebuilds nodes and costs as much as the parse.
    """
    for name in _fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield from _expressions_in(value)
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    yield from _expressions_in(item)


@lru_cache(maxsize=None)
def _fields(kind: type) -> Tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind) if f.name not in _SKIPPED_FIELDS)


_SKIPPED_FIELDS = frozenset({"lpar", "rpar", "whitespace_before", "whitespace_after", "comma", "dot", "operator",
                             "whitespace_after_star", "whitespace_after_arg", "equal", "colon", "semicolon"})


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
    """Decide what `.to(...)`/`.type(...)`/`.cuda()` does from its arguments; None when it is a no-op."""
    if method == "type" and not call.args:
        return None, "", ""  # `.type()` with no argument returns a string
    if method != "to":
        argument = ", ".join(
            (f"{arg.keyword.value}={_plain_text(arg.value)}" if arg.keyword is not None else _plain_text(arg.value))
            for arg in call.args
        )
        return placement.kind, f".{method}({argument})", argument
    kind: Optional[str] = None
    texts = []
    for arg, value in args:
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword in ("non_blocking", "copy", "memory_format"):
            continue
        text = _plain_text(arg.value)
        texts.append(text)
        lowered = text.lower()
        if value.xla or any(marker in lowered for marker in cat.REPLACING_DEVICE_MARKERS):
            return cat.REPLACE, f".to({text})", text
        if keyword == "dtype" or _is_dtype(text):
            kind = kind or cat.CAST
            continue
        if lowered.strip("'\"") in cat.NOOP_DEVICES or lowered in ('torch.device("cpu")', "torch.device('cpu')"):
            continue
        kind = cat.MOVE
    if kind is None:
        return None, "", ""
    argument = ", ".join(texts)
    return kind, f".to({argument})", argument


def _is_cpu_device(node: Optional[cst.BaseExpression]) -> bool:
    if isinstance(node, cst.SimpleString):
        return node.value.strip("'\"") == "cpu"
    if isinstance(node, cst.Call) and dotted_name(node.func) in ("torch.device", "device") and len(node.args) == 1:
        return _is_cpu_device(node.args[0].value)
    return False


def _is_dtype(text: str) -> bool:
    if text.startswith("torch.") and text[6:] in cat.DTYPE_NAMES:
        return True
    return "dtype" in text.lower()


def _plain_text(node: cst.BaseExpression) -> str:
    dotted = dotted_name(node)
    if dotted is not None:
        return dotted
    if isinstance(node, cst.SimpleString):
        return node.value
    return cst.Module(body=[]).code_for_node(node)
