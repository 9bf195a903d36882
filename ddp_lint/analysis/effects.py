"""What a call does to the objects it is handed: library calls from the catalog (placements, holders,
managed calls), methods of modules and tensors, and device values; calls of the project go to
analysis/replay.py."""
from __future__ import annotations

import dataclasses
import re
from keyword import iskeyword
from typing import FrozenSet, Iterator, List, Optional, Tuple

import libcst as cst

from .. import catalog as cat
from .events import (
    ANY_SUBMODULE,
    DiscardedWrapperEvent,
    ForwardEvent,
    Handle,
    ManagedEvent,
    PlacementEvent,
    StateEvent,
    StateMovedEvent,
)
from .names import FRESH_RECEIVER, callee_name, code_text, dotted_name, keyword_is_true, plain_text
from .heap import Value, EMPTY, element_of, handle_key
from .summary import LIBRARY_MODULE, ArgumentState, CallFact, argument_of, split_arguments
from .bindings import is_cpu_device, literal_key
from .holders import MODEL_NAME
from .liveness import named_after

# An unknown call whose name says it collects parameters (`get_param_groups(model, wd)`).
_PARAM_COLLECTOR = re.compile(r"param|group|decay", re.IGNORECASE)
# Builtins that hand on the modules of their first argument in another container.
_PASS_THROUGH = frozenset({"enumerate", "list", "tuple", "reversed", "sorted", "iter", "filter", "set"})


class EffectWalker:
    """What calls do, for `ScopeWalker` (analysis/walker.py)."""

    def _eval_call(self, call: cst.Call) -> Value:
        func = call.func
        dotted = dotted_name(func)
        keyed = self._kwarg(call)
        if keyed is not None:
            return keyed  # `kwargs.get("model")`
        if (dotted == "setattr" or dotted in cat.OWN_CHILD_REGISTRATIONS) and self._set_own_attribute(call):
            return EMPTY
        receiver, method, library_call = self._eval_receiver(call, dotted)
        if method is not None and dotted is not None and (self._handlers or method in cat.HANDLER_REGISTRATIONS):
            self._run_handlers(call, dotted.rpartition(".")[0], method)
        first_event = len(self.scope.events)
        args = self._spread_entries([(arg, self._eval(arg.value)) for arg in call.args])
        self._args_from = first_event  # the events the arguments made start here (see _helper_effect)
        arrived = tuple(h for _, value in args for h in value.holders if h.arrives)
        if arrived and self._rebinds_passed_holder(call, arrived):
            # `optimizer = OptimizerWrapper(optimizer)` in a function handed both: it owns the order
            self._emit(ManagedEvent(self._site(call), arrived, f"{callee_name(func)}()"))
        if dotted == "type" and len(args) == 1 and args[0][1].holders:
            return Value(makes=args[0][1].holders[0].kind)  # `type(optimizer)(params, **optimizer.defaults)`
        built = self._built_holder(call, dotted, receiver, args)
        if built is not None:
            return built
        if dotted is not None and dotted in self.env and self.env[dotted].holder is None and not library_call:
            self._emit(ForwardEvent(self._site(call), self.env[dotted].handle))
        managed = any(value.holders for _, value in args) and dotted is not None and self.catalog.is_managed(
            self._qualify(dotted) or dotted)
        if not managed:
            self._training_handoff(call, args)
        elif "." in dotted and not library_call:
            # the pair handed to the call the catalog names its manager (`accelerator.prepare(model,
            # optimizer)`) is remapped there, whatever code runs it: the library's own, checked as a project
            self._emit(ManagedEvent(self._site(call), tuple(h for _, value in args for h in value.holders), dotted))
        attributed = len(self.calls)
        temporary = self._name_fresh_receiver(call, dotted, receiver, method, library_call)
        if temporary is not None:
            dotted = f"{temporary}.{method}"
        value = self._call_effect(call, dotted, receiver, method, library_call, args)
        if temporary is not None:
            self._forget_fresh_receiver()
            dotted = None
        if (method in cat.PARAMETER_KEEPING_METHODS and not library_call and len(self.calls) == attributed
                and self._held_module(receiver)):
            # `self.model.train()` on the model an optimizer holds: a module's method, for the count of a
            # project method's callers (a plain class's `Solver.train` is not called here)
            self.calls.append(CallFact((LIBRARY_MODULE, f"{LIBRARY_MODULE}.{method}"), frozenset(), {}))
        if dotted is not None and self._qualify(dotted) in cat.UNPICKLING_CALLS:
            # a new object, and so is each of its entries (bindings._note_replaced_name reads this)
            value = dataclasses.replace(value, unpickled=True)
        device = self._built_on_device(call) if value.handle is None else None
        if device is not None:
            # `nn.Linear(4, 2, device=device)`: built there, as if moved there before it has a name
            event = PlacementEvent(self._site(call), Handle(-1, (), ""), cat.MOVE, f"{dotted}(..., device={device})",
                                   argument_text=device, operation=cat.DEVICE_KEYWORD)
            value = dataclasses.replace(value, pending=value.pending + (event,))
        # what a managed call returns is the library's pair (`model, opt = accelerator.prepare(model, opt)`),
        # each position of its tuple too
        if not managed:
            return value
        return dataclasses.replace(value, managed=True,
                                   fields=tuple(dataclasses.replace(f, managed=True) for f in value.fields))

    def _name_fresh_receiver(self, call: cst.Call, dotted: Optional[str], receiver: Value, method: Optional[str],
                             library_call: bool) -> Optional[str]:
        """`Trainer(cfg).train(model)`: a method of an object a project class call has just built, with no
        name to look it up by. Methods resolve by the receiver's class, so the object gets a name of its
        own for this call, as `trainer = Trainer(cfg); trainer.train(model)` would give it."""
        if (dotted is not None or method is None or library_call or not isinstance(call.func, cst.Attribute)
                or not isinstance(call.func.value, cst.Call) or receiver.handle is None):
            return None
        instance = self._instances.get(receiver.handle.obj)
        if instance is None or instance.methods(method) is None:
            return None
        self._bind_target(cst.Name(FRESH_RECEIVER), receiver)
        self.fresh_receiver_text = code_text(call.func.value)
        return FRESH_RECEIVER

    def _forget_fresh_receiver(self) -> None:
        """The call's name for the object ends with it, and what the call recorded under it (`<name>.device`)."""
        for key in [key for key in self.env if key == FRESH_RECEIVER or key.startswith(FRESH_RECEIVER + ".")]:
            del self.env[key]
        self.fresh_receiver_text = None

    def _call_effect(self, call: cst.Call, dotted: Optional[str], receiver: Value, method: Optional[str],
                     library_call: bool, args) -> Value:
        """What a call does once its arguments are known: a replayed summary, the catalog's effect, a
        method's, or a container's value."""
        func = call.func
        if dotted == "getattr" and len(args) >= 2:
            read = self._attribute_read(call, args)
            if read is not None:
                return read
        qualified = self._qualify(dotted) if dotted else ""
        xla = "xla_device" in qualified or any(value.xla for _, value in args)

        # `session.cuda()`, `self.configure_optimizers()` on an object of a class that defines the method
        # itself: its own method, not torch's or the catalog's (methods resolve by the receiver's class)
        own = method is not None and not library_call and dotted and self._defines_method(receiver, method, dotted)
        result = self._helper_effect(call, dotted, args) if own else None
        if result is None and qualified and not ((method is None or library_call) and self._keeps_its_module(dotted, qualified, args)):
            result = self._library_effect(call, qualified, args, library_call or method is None)
        if result is None and method is None and dotted and not own:
            result = self._derived_placement(call, dotted, args)
        if result is not None:
            return result
        if own and self._returns_nothing(dotted):
            # its body returns no value: a name that reads like an optimizer factory gives its caller
            # nothing (an abstract stub, or a value from code not followed, says nothing: the generic
            # rules still apply)
            return self._container_value(dotted, qualified, receiver, args, xla, method)
        if not own and method is not None and not library_call:
            result = self._method_effect(call, method, receiver, args)
            if result is not None:
                return result
        if dotted and _names_own_base_method(call, dotted):
            result = self._base_method_on_self(call, dotted, args)
            if result is not None:
                return result
        if dotted:
            # an object's own method was replayed above, once: its events must not happen twice
            result = None if own else self._helper_effect(call, dotted, args)
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
        return self._container_value(dotted, qualified, receiver, args, xla, method)

    def _container_value(self, dotted: Optional[str], qualified: str, receiver: Value, args, xla: bool,
                         method: Optional[str] = None) -> Value:
        """What a call the summaries do not know returns: a module container, a builtin that passes its
        items through (`list`, `zip`, `enumerate`), or something that carries the parameters handed in;
        a tensor where what it was computed from is (see _kept_place)."""
        if qualified in cat.MODULE_CONTAINERS:
            # `nn.ModuleList([policy, q_func])`: a module whose children are the modules handed to it
            return Value(members=frozenset().union(*(frozenset(value.handles) | value.members for _, value in args)))
        if dotted in ("zip", "enumerate") and self._is_free(dotted) and args and not any(arg.star for arg, _ in args):
            # `for i, (block, lr) in enumerate(zip(net.blocks, lrs))`: each item is a tuple whose
            # positions are items of the sources
            sources = [value for arg, value in args if arg.keyword is None]
            items = (EMPTY, element_of(sources[0])) if dotted == "enumerate" else tuple(map(element_of, sources))
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
            params = params | frozenset({h for h in given if MODEL_NAME.search(h.text)} or given)
        return Value(params=params, xla=xla, device_of=_kept_place(receiver, args, method))

    def _attribute_read(self, call: cst.Call, args) -> Optional[Value]:
        """`getattr(self, "netG")` is that attribute; `getattr(self, "netG" + str(s))` is one of the
        object's own attributes, which one only the run knows (vid2vid's scales): a part of the object.
        Another object's attribute named at run time may be anything (`getattr(self.model, target)`
        is a method mmengine compiles), so only the object's own count."""
        owner, value = dotted_name(call.args[0].value), args[0][1]
        if owner is None or value.handle is None or value.holders or "." in owner and not owner.startswith("self."):
            return None
        name = literal_key(call.args[1].value)
        if name is not None and name.isidentifier():
            handles = self._resolve_all(f"{owner}.{name}")
        elif owner == "self":
            handles = tuple(Handle(h.obj, h.sub + (ANY_SUBMODULE,), h.text) for h in value.handles)
        else:
            return None
        return Value(handles[0], alts=frozenset(handles[1:])) if handles else None

    def _part_named_at_run_time(self, node: cst.BaseExpression) -> Tuple[Handle, ...]:
        """`getattr(model, name)` with a name that is no literal: some part of what `model` holds."""
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "getattr"
                and len(node.args) == 2 and literal_key(node.args[1].value) is None):
            return ()
        owner = dotted_name(node.args[0].value)
        held = self.env.get(owner) if owner else None
        if owner is None or (held is not None and held.holders):
            return ()  # (an optimizer's attribute is no module)
        return tuple(Handle(h.obj, h.sub + (ANY_SUBMODULE,), h.text) for h in self._resolve_all(owner))

    def _base_method_on_self(self, call: cst.Call, dotted: str, args) -> Optional[Value]:
        """`DQN.__init__(self, config)` in a subclass: the named base's method runs on this object with
        the arguments after `self`, as `super().__init__(config)` would. None when the class header
        names no such base with a summary (`utils.to_device(self, device)` is a plain call)."""
        base, _, method = dotted.partition(".")
        lookup = getattr(self.method_helpers, "of_base", None)
        if lookup is None or lookup(base, method) is None:
            return None
        saved = self._anchor
        self._anchor = saved or call  # events stand at this call, not at the call without `self`
        try:
            result = self._helper_effect(call.with_changes(args=call.args[1:]), f"self.{method}", args[1:],
                                         inherited=True, base=base)
        finally:
            self._anchor = saved
        return result if result is not None else EMPTY

    def _held_module(self, receiver: Value) -> bool:
        """Types from use: what an optimizer here holds the parameters of is a module."""
        handle = receiver.handle
        if handle is None:
            return False
        return any(held.obj == handle.obj and held.sub == handle.sub for held in self._held_models())

    def _training_handoff(self, call: cst.Call, args) -> None:
        """`train(model, optimizer)`: a call handed a bare module together with an optimizer trains
        through that module (a call handed only the module may just log or save it). Calls that
        manage the pair themselves (`accelerator.prepare`) are not training."""
        if not any(value.holders for _, value in args):
            return
        for arg, value in args:
            name = dotted_name(arg.value)
            if not value.holders and value.handle is not None and name is not None and name in self.env:
                self._emit(ForwardEvent(self._site(call), value.handle))

    def _bound_beside(self, call: cst.Call) -> bool:
        """`model = torch.compile(original_model)`: the call's result is bound to a name other than the
        module it is handed, which keeps a name of its own afterwards: an attribute, a global, or a local read
        again (a `return`, a rebinding of the same name, or a parameter never read again does not)."""
        small = self._current_node
        first = next((a.value for a in call.args if a.keyword is None and not a.star), None)
        if not isinstance(small, cst.Assign) or small.value is not call or len(small.targets) != 1 or first is None:
            return False
        target, handed = dotted_name(small.targets[0].target), dotted_name(first)
        if target is None or handed is None or target == handed:
            return False
        function = self._chain[0] if self._chain and isinstance(self._chain[0], cst.FunctionDef) else None
        return "." in handed or function is None or named_after(function, handed, self._chain[-1])

    def _keeps_its_module(self, dotted: Optional[str], qualified: str, args) -> bool:
        """A class of the project named like a library holder only by its bare name (`ExponentialMovingAverage`)
        whose constructor keeps an argument it is handed (`self.module = module`): what its own code does,
        not the library class's. It reads the module's parameters when it is used, wherever they are then;
        a vendored copy that snapshots them, or one derived from a library holder, stays the catalog's."""
        if not dotted or qualified in self.catalog.holders or self.catalog.holder_kind(qualified) is None:
            return False
        summary, _ = self._summary_for(dotted, False)
        if summary is None:
            return False
        positional, keywords = split_arguments(args)
        kept = (argument_of(part.origin, positional, keywords) for part in summary.attributes.values()
                if part.origin.kind == "param")
        if not any(value is not None and value.handle is not None for value in kept):
            return False
        return not any(self.catalog.holder_kind(base) for base in self._library_bases(dotted, 0))

    def _derived_placement(self, call: cst.Call, dotted: str, args) -> Optional[Value]:
        """A class of the project derived from a library wrapper (`class DataParallelModel(DataParallel)`)
        is that wrapper: calling it wraps its first argument, as the library class does (types through
        the class hierarchy; the catalog knows the library's classes, the project index the project's)."""
        terminal = dotted.rsplit(".", 1)[-1]
        if not terminal[:1].isupper() or self.catalog.call_placement(self._qualify(dotted)):
            return None
        for base in self._library_bases(dotted, 0):
            placement = self.catalog.call_placement(base)
            if placement is not None:
                return self._library_effect(call, base, args, True, label=terminal)
        return None

    def _library_bases(self, dotted: str, depth: int) -> List[str]:
        """The library classes a class derives from: a class of this file by the bases it names (qualified
        as this file imports them), another module's by the project index."""
        base_names = getattr(self.constructors, "base_names", None)
        if "." in dotted or base_names is None or not self.constructors.defines(dotted):
            imported = self.imports.imported_name(dotted)
            return list(self.project.library_bases(imported, self.path)) if self.project is not None and imported else []
        found: List[str] = []
        for base in base_names(dotted) if depth < 4 else ():
            if "." not in base and self.constructors.defines(base):
                found += self._library_bases(base, depth + 1)
                continue
            imported = self.imports.imported_name(base)
            of_project = self.project.library_bases(imported, self.path) if self.project is not None and imported else ()
            found += list(of_project) or [self._qualify(base)]
        return found

    def _library_effect(self, call: cst.Call, qualified: str, args, is_function: bool, label: str = "") -> Optional[Value]:
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
        if is_function and (qualified in cat.PARAMETER_CLASSES or (qualified in cat.TENSOR_FACTORIES and keyword_is_true(call, cat.REQUIRES_GRAD))):
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
                return Value(managed=True)
        placement = self.catalog.call_placement(qualified) if is_function else None
        if placement is not None and label:
            placement = dataclasses.replace(placement, label=label)  # the project's subclass, by its own name
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
            # a wrapper takes the parameters of the modules its module keeps too (`DataParallel(full)` of
            # `full = FullModel(generator, ...)` wraps the generator's), as a move moves them
            own = {h.obj for h in target.handles}
            kept = tuple(h for h in self._children(args[0][0].value, target, "") if h.obj not in own)
            whole = f"{placement.label}({dotted_name(args[0][0].value) or code_text(args[0][0].value)})"
            beside = placement.applied_last and self._bound_beside(call)
            for handle in target.handles + kept:
                self._emit(PlacementEvent(site, handle, kind, placement.label if handle in target.handles else whole,
                                          placement.sync_wrapper, placement.ddp, operation=placement.label,
                                          unknown_keyword=unknown, applied_last=placement.applied_last, beside=beside))
            return Value(handle=target.handle, alts=target.alts, wrapper=placement.label if placement.sync_wrapper else "")
        return None

    def _state_effect(self, call: cst.Call, method: str, receiver: Value) -> bool:
        """`step()` / `load_state_dict()` on an optimizer: on the holders it is, and, for this function's
        callers, on what it was handed or keeps on the object. Whether it was a holder here."""
        handle = receiver.handle
        if handle is not None and not handle.sub and not self._silent:
            origin = self.origins.get(handle.obj)
            if origin is not None and origin.kind == "param":
                self.argument_state_calls.append(ArgumentState(origin, method, next(self.order)))  # for its callers
        if receiver.holders:
            site = self._site(call)
            for holder in receiver.holders:
                self._emit(StateEvent(site, holder, method))
            if handle is not None and handle.text.startswith("self.") and "." not in handle.text[5:] and not self._silent:
                self.kept_states.append((handle.text, method, next(self.order)))  # see HelperSummary.kept_states
            return True
        if handle is not None and handle.text.startswith("self.") and not handle.sub and not self._silent:
            self.state_calls.append((handle.text, method, next(self.order)))  # on `self.optimizer`, for its callers
        return False

    def _method_effect(self, call: cst.Call, method: str, receiver: Value, args) -> Optional[Value]:
        if receiver.state_of:
            return self._state_method(call, method, receiver)
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
        scaled = _scaled_step(call, method, args)
        if scaled is not None:
            # `scaler.step(optimizer)`: a gradient scaler steps the optimizer it is handed
            self._state_effect(call, cat.STEP, scaled)
            return EMPTY
        if method in cat.STATE_METHODS and self._state_effect(call, method, receiver):
            return EMPTY
        if handle is None and method in cat.PARAMETER_METHODS and isinstance(call.func, cst.Attribute):
            # types from use: `getattr(self.model, name).parameters()` reads the parameters of a part of
            # the model named at run time, so that part is a module (which one, only the run knows)
            part = self._part_named_at_run_time(call.func.value)
            return Value(params=frozenset(part)) if part else None
        if handle is None:
            return None
        if method in cat.COLLECTING_METHODS:
            # `decay.append(p)` for `p` of `named_parameters()`: p carries the model's parameters, it is no module
            collected = frozenset().union(*(value.params or frozenset(value.handles) for _, value in args)) if args else frozenset()
            members = frozenset().union(*(value.members | frozenset(value.handles) for _, value in args)) if args else frozenset()
            key = handle.text
            # `optimizers.append(opt)`: the list holds the optimizer too (kept later as `self.optimizers`)
            held = tuple(h for _, value in args for h in value.holders)
            if key in self.env and (collected or held) and not handle.sub:
                binding = self.env[key]
                held = tuple(h for h in held if all(h is not k for k in binding.holders))
                self._assign(key, dataclasses.replace(binding, params=binding.params | collected,
                                                      members=binding.members | members,
                                                      holders=binding.holders + held))
            return EMPTY
        if method in cat.PARAMETER_METHODS:
            return self._parameters_of(call, receiver, method)
        if method in ("values", "items") and receiver.members:
            return Value(params=receiver.params, members=receiver.members)  # `{"G": G, "D": D}.values()`
        if method in ("values", "items") and receiver.handle is not None and not receiver.holders:
            # a dict this function was handed (`heads.items()`): its values are what its callers put in
            # it, which a call's replay gives as the modules it holds (see SummaryReplay._actuals)
            return Value(params=receiver.params, members=frozenset(receiver.handles))
        if method in cat.MODULE_ITERATORS:
            return Value(members=frozenset(Handle(h.obj, h.sub + (ANY_SUBMODULE,), h.text) for h in receiver.handles))
        replacing = cat.KEYWORD_REPLACEMENTS.get(method)
        if replacing is not None and keyword_is_true(call, replacing[0]):
            site = self._site(call)
            for each in receiver.handles:
                self._emit(PlacementEvent(site, each, cat.REPLACE, replacing[1]))
            return EMPTY
        node = call.func.value if isinstance(call.func, cst.Attribute) else None
        if handle_key(handle) in self._data and (method in cat.METHOD_PLACEMENTS or method in cat.HOME_METHODS):
            return EMPTY  # an attribute bound to data (`model.class_weights.cpu()`): a new tensor, nothing moved
        if (isinstance(node, cst.Attribute) and node.attr.value in cat.TENSOR_ATTRIBUTES
                and (method in cat.TENSOR_COPY_METHODS or method in cat.HOME_METHODS)):
            # `self.mapping.weight.data.cpu().numpy()`: what only a tensor has is a tensor, and its move
            # or cast a new tensor; the module's parameters stay where they are
            return EMPTY
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

    def _state_method(self, call: cst.Call, method: str, receiver: Value) -> Value:
        """A method of an optimizer's state or of a tensor in it (`.values()`, `.items()`, `.to(device)`):
        more of the same state; a move of it moves the state (see events.StateMovedEvent)."""
        placement = cat.METHOD_PLACEMENTS.get(method)
        if placement is not None and placement.kind == cat.MOVE:
            objects = receiver.state_of
            self._emit(StateMovedEvent(self._site(call), self._holders_of(objects), objects))
        return Value(state_of=receiver.state_of)

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
            # `DomainDiscriminator(...).to(device)`: made by the call it is a method of, so placed wherever it is
            birth = isinstance(call.func.value, cst.Call)
            for each in receiver.handles:
                self._emit(PlacementEvent(site, each, kind, label, argument_text=argument, operation=method,
                                          carriers=carriers, device_of=device,
                                          to_earlier_place=bool(device & self._earlier_places), at_birth=birth))
            # named as the code spells it (`self.cuda(rank)`), though it reaches `self.G`; a
            # container module (`nn.ModuleList([policy, q_func])`) moves the modules it holds
            whole = f"{dotted_name(call.func.value) or code_text(call.func.value)}{label}"
            own = {h.obj for h in receiver.handles}
            members = tuple(m for m in receiver.members if m.obj not in own)
            for each in self._children(call.func.value, receiver, method) + members:
                self._emit(PlacementEvent(site, each, kind, whole, argument_text=argument, operation=method,
                                          carriers=carriers))
        return same

    def _parameters_of(self, call: cst.Call, receiver: Value, method: str) -> Value:
        """`x.parameters()`: x's, and its children's, as its move moves them (`_children`). An optimizer on
        `self.parameters()` holds `self.encoder`'s, which a later `self.encoder.cuda()` moves; one on
        `agent.parameters()` holds those of what `Agent(net)` kept (`self.net = net`), which `net.cuda()` moves."""
        if not isinstance(call.func, cst.Attribute):
            return Value(params=frozenset(receiver.handles))
        kept = self._kept_by_instance(call.func.value, receiver, method)
        children = self._with_named_children(call.func.value, receiver, method, kept)
        # named as parts of the object (`gan.generator`): messages name the object whose parameters they are.
        # Only what was handed as a name of its own or built here as a module counts: an entry read off
        # another object (`self._drop = args.drop_prob`, `FLAGS.hidden`) is a setting, no module
        parts = (Handle(h.obj, h.sub, f"{receiver.handle.text}.{h.text}")
                 for h in kept if ("." not in h.text or h.obj in self._class_built) and not cat.is_config_entry(h.text))
        return Value(params=frozenset(receiver.handles) | frozenset(c for c in children if c.obj in self._class_built)
                     | frozenset(parts))

    def _children(self, node: cst.BaseExpression, receiver: Value, method: str) -> Tuple[Handle, ...]:
        """The modules kept in the receiver's attributes as separate objects (`self.G = Generator()`,
        `self.model = model`): a module's move or cast moves its whole subtree, so `self.cuda()` in a
        module's own method moves `self.G`. Plain tensors kept in attributes are not moved, and a class
        that defines the method itself (a plain class's own `to()`) is not a module being moved."""
        return self._with_named_children(node, receiver, method, self._kept_by_instance(node, receiver, method))

    def _with_named_children(self, node: cst.BaseExpression, receiver: Value, method: str,
                             kept: Tuple[Handle, ...]) -> Tuple[Handle, ...]:
        """`kept` (`_kept_by_instance`) and the modules this scope binds under the receiver's name."""
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
        if instance is None or instance.methods(method) is not None:
            return ()
        own = {h.obj for h in receiver.handles}
        return tuple(dict.fromkeys(
            h for handles in instance.attributes.values() for h in handles
            if h.obj not in own and h.obj not in self._data and h.obj not in self._leaves))

    def _device_value(self, value: Value) -> FrozenSet[int]:
        """Where a value's tensors are, as a device value: its own device value, else the objects whose
        parameters it carries, else the objects it is (a device held by a name is that name's value)."""
        if value.device_of:
            return value.device_of
        if value.params:
            return frozenset(h.obj for h in value.params)
        # an attribute the object keeps (`self.net._device = "cuda"`) is a value of its own, not where the
        # object's tensors are: only its `.device` says that
        return frozenset(h.obj for h in value.handles if not h.sub or h.sub[-1] == cat.DEVICE_ATTRIBUTE)

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
        if is_cpu_device(node):
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

    def _enter_manager(self, manager: cst.BaseExpression) -> bool:
        """`with <re-points the optimizers>():`: the holders held here are managed from now on; whether
        the placements inside it are made in step with them. `with torch.device(x):`: the modules built
        inside it are built on x."""
        if (isinstance(manager, cst.Call) and self._qualify(dotted_name(manager.func) or "") in cat.DEVICE_CONSTRUCTORS
                and len(manager.args) == 1 and manager.args[0].keyword is None):
            self._manager_context = plain_text(manager.args[0].value)
        if not (isinstance(manager, cst.Call) and cat.syncs_optimizer(callee_name(manager.func))):
            return False
        held = self._held_holders()
        if held:
            self._emit(ManagedEvent(self._site(manager), held, f"{callee_name(manager.func)}()"))
        return True

    def _spread_entries(self, args):
        """`f(**kwargs)` of a dict filled here by constant keys: each key as a keyword argument (after
        the keywords written out, which a spread may not repeat)."""
        if not self._entries or not any(arg.star == "**" for arg, _ in args):
            return args
        written = {arg.keyword.value for arg, _ in args if arg.keyword is not None}
        spread = []
        for arg, value in args:
            entries = self._entries.get(dotted_name(arg.value) or "") if arg.star == "**" else None
            # only keys that can be keywords: `kwargs["scheduler.params.steps"]` cannot name a parameter
            spread.extend((cst.Arg(arg.value, keyword=cst.Name(key)), entry)
                          for key, entry in (entries or {}).items()
                          if key not in written and key.isidentifier() and not iskeyword(key))
        return args + spread

    def _set_own_attribute(self, call: cst.Call) -> bool:
        """`setattr(self, name, head)`, `self.add_module(name, head)`: the object keeps `head` in an
        attribute, as `self.<name> = head` would (a name computed at run time is an attribute of its
        own, never read back by name: what it keeps still moves with the object)."""
        args = list(call.args)
        if isinstance(call.func, cst.Attribute):
            args = [cst.Arg(call.func.value)] + args  # `self.add_module(name, head)`: the receiver first
        if (len(args) != 3 or any(arg.keyword is not None or arg.star for arg in args)
                or dotted_name(args[0].value) != "self" or self._rebound_self()):
            return False
        name = args[1].value
        attribute = literal_key(name)
        # a name from a collection of literals (`for name in self.save_names:`) is each of them
        attributes = [attribute] if attribute is not None else sorted(self._eval(name).strings)
        attributes = [a for a in attributes if a.isidentifier()] or ["_set_" + re.sub(r"\W+", "_", code_text(name)).strip("_")]
        value = self._eval(args[2].value)
        for attribute in attributes:
            self._bind_target(cst.Attribute(cst.Name("self"), cst.Name(attribute)), value, args[2].value)
        return True

    def _rebound_self(self) -> bool:
        """Whether `self` names something the code bound (a parameter of a plain function, an
        assignment), not the object whose method this is (a read of it, `getattr(self, name)`, binds
        it as a free name)."""
        binding = self.env.get("self")
        return binding is not None and binding.handle is not self._free.get("self")

    def _check_discarded(self, node: cst.BaseExpression, value: Value) -> None:
        if not isinstance(node, cst.Call):
            return
        dotted = dotted_name(node.func)
        if not dotted:
            return
        placement = self.catalog.call_placement(self._qualify(dotted))
        if placement is not None and placement.sync_wrapper:
            self._emit(DiscardedWrapperEvent(self._site(node), value.handle, placement.label))


def _kept_place(receiver: Value, args, method: Optional[str]) -> FrozenSet[int]:
    """Where the result of a call nothing else describes is: a tensor's method (`batch.sum(dim=1)`) keeps
    the tensor's place; a forward or a function handed tensors of one known place (`self.augment(batch)`)
    computes there, as the device the inputs share is where the computation runs. The calls that do
    change a place are placements and `.cpu()`, answered before this."""
    if method is not None and receiver.device_of:
        return receiver.device_of if method not in cat.HOME_METHODS else frozenset()
    known = {value.device_of for arg, value in args if arg.keyword is None and not arg.star and value.device_of}
    return known.pop() if len(known) == 1 else frozenset()


def _scaled_step(call: cst.Call, method: str, args) -> Optional[Value]:
    """The optimizer a gradient scaler's `step` is handed (`scaler.step(optimizer)`), or None."""
    if method != cat.STEP or not args or args[0][0].keyword is not None or not isinstance(call.func, cst.Attribute):
        return None
    receiver = dotted_name(call.func.value) or ""
    return args[0][1] if _SCALER.search(receiver.rsplit(".", 1)[-1]) else None


_SCALER = re.compile(cat.SCALER_RECEIVER)


def _names_own_base_method(call: cst.Call, dotted: str) -> bool:
    """`Base.__init__(self, config)`, `Base.setup(self)`: a base's method called on this object."""
    first = call.args[0] if call.args else None
    return (dotted.count(".") == 1 and not dotted.startswith("self.") and first is not None
            and first.keyword is None and not first.star and isinstance(first.value, cst.Name)
            and first.value.value == "self")


def _is_super_call(func: cst.BaseExpression) -> bool:
    return (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call)
            and isinstance(func.value.func, cst.Name) and func.value.func.value == "super")


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


def _classify_method_placement(method: str, placement: cat.Placement, call: cst.Call, args) -> Tuple[Optional[str], str, str]:
    """The catalog's argument rules, given the call's argument texts."""
    arguments = [(arg.keyword.value if arg.keyword is not None else None, plain_text(arg.value), value.xla)
                 for arg, value in args]
    return cat.classify_method_placement(method, placement, arguments)
