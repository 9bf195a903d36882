"""Names and expressions: binding targets, resolving `a.b.c` to the objects it may be, and evaluating
an expression to a `Value` (calls are analysis/effects.py's)."""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Tuple

import libcst as cst

from .. import catalog as cat
from ..syntax import STANDARD_LIBRARY
from .kwargs import key_of
from .events import DiscardedWrapperEvent, Handle, HolderEvent, ManagedEvent, PlacementEvent, RebindEvent, RefusalEvent, RegroupEvent
from .blocks import expression_children
from .names import code_text, dotted_name, dotted_names, operands, plain_text
from .heap import Binding, Callables, Env, Origin, Value, EMPTY, any_maker, element_of, first_handle, handle_key, join_values, unique_holders, value_of
from .flow import bound_keys

# A call's arguments that hand it no object (`ArcMargin(64, 1000)`, `Head(-1, "cls")`)
_SCALARS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.UnaryOperation)
_LITERALS = (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List,
             cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.BinaryOperation, cst.UnaryOperation)


class BindingWalker:
    """Names and expressions of `ScopeWalker` (analysis/walker.py)."""

    # Local names bound to a config's entry for the optimizer (`op_cfg = cfg.get("optimizer", {...})`):
    # a factory handed one builds an optimizer (holders._builds_from_config). Replaced, never changed.
    _optimizer_configs: FrozenSet[str] = frozenset()

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

    def _only_when_absent(self, key: str, holder: HolderEvent) -> bool:
        """Whether this path runs only when the handed optimizer is missing: under `if key is None:`,
        `if not key:` or the `else` of `if key is not None:` / `if key:`."""
        names = {key, self.scope.name_of(holder)}
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
            names = set(dotted_names(conjunct))
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
            self._emit(RefusalEvent(self._site(test), tuple(about), frozenset(disjuncts)))

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
                # the object a method runs on (`self`, `self.model`) is what its callers call it on
                self.origins[handle.obj] = Origin("self" if key == "self" or key.startswith("self.") else "local", key)
            binding = self.env[key] = Binding(handle)
        return binding

    def _global(self, key: str) -> Handle:
        """The module's object of a name, as a function reads it without binding it: its free object,
        one of its own when a local of that name shadows it here."""
        if self._is_free(key):
            return self._binding(key).handle
        if key not in self._free:
            self._free[key] = Handle(next(self.ids), (), key)
            self.origins[self._free[key].obj] = Origin("local", key)
        return self._free[key]

    def _resolve(self, dotted: str) -> Handle:
        return self._resolve_all(dotted)[0]

    def _resolve_all(self, dotted: str) -> Tuple[Handle, ...]:
        """Every object `a.b.c` may be: one per object its root name may hold."""
        key, rest = self._split(dotted)
        if key not in self.env and key.startswith("self."):
            reads = self._property_read(key[5:])
            if reads:  # `self.inner_model.plm` of a property returning `self.model` (or a list of them)
                return tuple(Handle(h.obj, h.sub, dotted) for read in reads for h in self._resolve_all(".".join((read,) + rest)))
        binding = self._binding(key)
        sub = tuple(part for part in rest if part not in cat.TRANSPARENT_ATTRIBUTES) if rest else ()
        base = binding.handle
        if not binding.alts and not binding.element:
            if sub and base.obj in self._instances:
                return self.kept_parts(base, sub, dotted)
            return (base if not sub and base.text == dotted else Handle(base.obj, base.sub + sub, dotted),)
        bases = (base,) + tuple(sorted(binding.alts - {base}, key=handle_key))
        if binding.element:  # a loop's module is named as its container named it
            return tuple(Handle(base.obj, base.sub + sub, ".".join((base.text,) + rest)) for base in bases)
        return tuple(Handle(base.obj, base.sub + sub, dotted) for base in bases)

    def _bind_target(self, target: cst.BaseExpression, value: Value, value_node: Optional[cst.BaseExpression] = None) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = [element.value for element in target.elements]
            for element, element_value in zip(elements, self._unpacked(len(elements), value, value_node)):
                self._bind_target(element, element_value)
            return
        if isinstance(target, cst.StarredElement):
            return
        if isinstance(target, cst.Subscript):
            self._store_into_container(target, value)
        if _is_params_entry(target):
            self.regroups = True  # a param group re-pointed at the parameters named now (HelperSummary.regroups)
            self._regroup_entry(target, value_node)
            if self._arrivals:
                # `group["params"] = [...]`: the function re-points a param group of an optimizer it was
                # handed (Lightning's PR #11886 fix), so it owns the order
                self._emit(ManagedEvent(self._site(value_node or target), self._arrivals, '["params"] ='))
        entry = _constant_entry(target)
        if entry is not None:
            # `kwargs["model"] = model`: the dict now holds it under that key (for a `**` spread of it)
            self._entries = {**self._entries, entry[0]: {**self._entries.get(entry[0], {}), entry[1]: value}}
        key = self._key_of(target)
        if key is None:
            self._assign_attribute(target, value_node, value)
            return
        if "." not in key:
            self._note_local_name(key, value_node, value)
        made = value_node is None or isinstance(value_node, cst.Call)  # made by this call, not another name of it
        if value.wrapper and value.handle is not None and made and (key == "_" or (value_node is not None
                                                                                  and self._never_read(key))):
            # `model, _ = setup(model)` of a helper returning (module, DDP(module)): `_` is the name for
            # what is thrown away, so is a local that nothing reads (`ddp_model = DDP(model)` and then
            # `model(x)`); training the module then syncs nothing
            self._emit(DiscardedWrapperEvent(self._site(value_node or target), value.handle, value.wrapper, name=key))
        old = self.env.get(key)
        if old is not None and isinstance(value_node, cst.Call) and key in dotted_names(value_node):
            # `optimizer = Wrapper(optimizer)`, `type(optimizer)(...)` on what this function was handed: it
            # owns that object's order from here (see HelperSummary.handled)
            self._note_handled(self._site(value_node), (Value(handle=old.handle),))
        if old is not None:
            self._note_replaced_name(old, value, value_node or target, key)
            value = _wrapped_back(old, value, value_node, key)
        if old is not None and (value.holders or value.unpickled_from):
            # a new holder, or the one saved with the model (`self.optimizer = checkpoint["optimizer"]`)
            for previous in old.holders:
                if previous.arrives and self._only_when_absent(key, previous):
                    continue  # `if self.optimizer is None: self.optimizer = ...`: the handed one is kept
                if all(previous is not new for new in value.holders):
                    self._emit(RebindEvent(self._site(value_node or target), previous, value.holder,
                                           0 if value.holders else value.unpickled_from))
        alts: FrozenSet[Handle] = frozenset()
        if value.handle is not None and (not value.holders or value.contains):
            # One of a container's modules keeps its own name (`net.backbone`, not the loop's `part`).
            text = (lambda h: h.text) if value.element else (lambda h: key)
            handle = Handle(value.handle.obj, value.handle.sub, text(value.handle))
            alts = frozenset(Handle(h.obj, h.sub, text(h)) for h in value.alts)
        else:
            handle = Handle(next(self.ids), (), key)
            self.origins[handle.obj] = Origin("local", key)
            self._note_new_object(handle.obj, value_node, value)
            if self._class_call(value_node):
                self.scope.class_made[handle.obj] = self._handed_objects(value_node)
        if self._class_call(value_node):
            self._class_built.add(handle.obj)
        for event in value.pending:
            self._emit(dataclasses.replace(event, handle=Handle(handle.obj, (), key), at_birth=True))
        if isinstance(value_node, cst.Call) and id(value_node) in self._built:
            self._instances[handle.obj] = self._built.pop(id(value_node))
        for holder in value.holders:
            if self.scope.name_of(holder) is None:
                self.scope.names[id(holder)] = f"{key}.{holder.attribute}" if holder.attribute else key
        self._assign(key, Binding(handle, value.params, value.holders, value.xla, alts, value.members,
                                  value.element and value.handle is not None, value.makes, value.callables,
                                  value.device_of, value.state_of, cpu=is_cpu_device(value_node), wrapper=value.wrapper,
                                  strings=value.strings, managed=value.managed, unpickled=value.unpickled))
        if (not self._branches and not self._loops and "." not in key
                and isinstance(value_node, (cst.BooleanOperation, cst.UnaryOperation))):
            self._definitions[key] = value_node

    def kept_parts(self, base: Handle, sub: Tuple[str, ...], text: Optional[str], depth: int = 0) -> Tuple[Handle, ...]:
        """`trainer.net` of `trainer = Trainer(net, ...)` whose `__init__` keeps `self.net = net`: the
        caller's `net`, and through objects an object keeps (`algorithm.trainer.policy`) or a property
        of their class (`trainer.networks` returning `[self.policy, self.qf]`). It is also a part of
        the object that keeps it (a wrapper module's parameters are its children's: an optimizer on
        `wrapper.parameters()` holds `wrapper.head`'s). `text` None: each object named as it was kept."""
        own = Handle(base.obj, base.sub + sub, base.text if text is None else text)
        instance = self._instances.get(base.obj) if sub and not base.sub and depth < 4 else None
        if instance is None:
            return (own,)
        kept = instance.attributes.get(f"self.{sub[0]}", ())
        if not kept:
            read = instance.methods(sub[0])
            if read is not None and read.reads_as_attribute:
                kept = tuple(h for part in read.attributes_read() if not part.sub
                             for h in instance.attributes.get(part.origin.key, ()))
        if not kept:
            return (own,)
        return tuple(h for k in kept for h in self.kept_parts(k, sub[1:], text, depth + 1)) + (own,)

    def _property_read(self, name: str) -> Tuple[str, ...]:
        lookup = getattr(self.method_helpers, "property_read", None)
        return lookup(name) if lookup is not None else ()

    def _never_read(self, key: str) -> bool:
        """A local name of a function that appears nowhere else in it (nor in what it nests): bound once
        and never read. Outside a function, another module may read it."""
        root = self._function
        if "." in key or root is None:
            return False
        counts = self._name_counts.get(id(root))
        if counts is None:
            names = _Names()
            root.visit(names)
            counts = self._name_counts[id(root)] = names.counts
        return counts[key] == 1

    def _note_replaced_name(self, old: Binding, value: Value, node: cst.CSTNode, key: str) -> None:
        """`model = copy.deepcopy(model)`, `model = torch.load(path)`: the name now means another object
        with parameters of its own (unpickling makes new ones, whatever object was saved); so does an
        attribute of the object rebound to a new module (`self.q_net = self.create_NN(...)`), which every
        method reads there."""
        if key.startswith("self.") and not old.holders and self._fresh_object(node, value, (old.handle,)):
            label = f"submodule reassignment `{key} = {dotted_name(node.func) or code_text(node.func)}(...)`"
            self._emit(PlacementEvent(self._site(node), old.handle, cat.REPLACE, label, rebinds_name=True))
            return
        if value.copy_of is not None and old.handle.obj == value.copy_of.obj:
            self._emit(PlacementEvent(self._site(node), value.copy_of, cat.REPLACE, value.copy_label,
                                      operation=value.copy_operation, rebinds_name=True))
            return
        if not value.unpickled or old.holders:
            return
        if isinstance(node, cst.Call):  # `model = torch.load(path)`
            label = f"{dotted_name(node.func)}()"
        elif isinstance(node, cst.Subscript) and value.handle is None:
            # `self.log_alpha = state_dict["sac_log_alpha"]` of what `torch.load` returned: the
            # assignment is the placement
            label = f"{old.handle.text} = {code_text(node)}"
        else:
            return
        self._emit(PlacementEvent(self._site(node), old.handle, cat.REPLACE, label, rebinds_name=True,
                                  unpickled_from=value.unpickled_from))

    def _unpacked(self, count: int, value: Value, value_node: Optional[cst.BaseExpression]) -> List[Value]:
        """What each of `count` names unpacking `value` gets."""
        if isinstance(value_node, (cst.Tuple, cst.List)) and len(value_node.elements) == count:
            return [self._peek(element.value) for element in value_node.elements]
        if len(value.fields) == count:
            return list(value.fields)  # a helper's tuple, a zip's item: position by position
        # `opt, sched = build(...)`: the first name gets the holder, each gets a new object;
        # `for name, sub in net.named_modules()`: each may be one of the modules.
        return [
            Value(params=value.params, holders=value.holders if i == 0 else (), members=value.members,
                  handle=value.handle if value.element else None, alts=value.alts if value.element else frozenset(),
                  element=value.element, state_of=value.state_of, managed=value.managed)
            for i in range(count)
        ]

    def _peek(self, node: cst.BaseExpression) -> Value:
        """The value of one element of a tuple already evaluated as a whole (no new events)."""
        dotted = dotted_name(node)
        if dotted is None:
            return EMPTY
        handles = self._resolve_all(dotted)
        binding = self.env.get(dotted)
        if binding is not None:
            return value_of(binding, handles)
        return Value(handles[0], alts=frozenset(handles[1:]))

    def _note_local_name(self, key: str, value_node: Optional[cst.BaseExpression], value: Value) -> None:
        """What a plain name means now: no longer a nested function; a module made here, or not; the
        optimizer's entry of a config, or not."""
        self._local_functions.pop(key, None)
        if self._makes_new_module(value_node, value):
            self._new_module_names.add(key)
        else:
            self._new_module_names.discard(key)
        if _reads_optimizer_entry(value_node):
            self._optimizer_configs = self._optimizer_configs | {key}
        elif key in self._optimizer_configs:
            self._optimizer_configs = self._optimizer_configs - {key}

    def _store_into_container(self, target: cst.Subscript, value: Value) -> None:
        """`out[name] = {"optimizer": optimizer}`, `cfg["params"]["params"] = parameters`: the container a
        name holds now holds what was stored in it too (an optimizer returned inside a dict of dicts, the
        parameters a config hands the factory it is given to)."""
        if not (value.holders or value.params):
            return
        base = target.value
        while isinstance(base, cst.Subscript):
            base = base.value
        key = self._key_of(base)
        binding = self.env.get(key) if key is not None else None
        if binding is None or (binding.holders and not value.holders):
            return  # an optimizer's own entries (`opt.param_groups[0]["params"] = ...`) are a regroup
        self._assign(key, dataclasses.replace(binding, holders=unique_holders(binding.holders + value.holders),
                                              params=binding.params | value.params))

    def _fresh_object(self, call: Optional[cst.BaseExpression], value: Value, replaced: Tuple[Handle, ...]) -> bool:
        """Types from use: an object bound where a module an optimizer holds was (`agent.q_net = NN(...)` of
        a library's class, or what a helper returns that called one) is a module there, and a new one when
        the class call that made it was handed neither that module nor a part of it."""
        if not any(_within(model, old) for model in self._held_models() for old in replaced):
            return False  # `model.qconfig = QConfig(...)`: no module an optimizer holds was there
        made = self._made_by_class(call, value)
        return made is not None and not any(_within(h, old) or _within(old, h) for h in made for old in replaced)

    def _made_by_class(self, node: Optional[cst.BaseExpression], value: Value) -> Optional[FrozenSet[Handle]]:
        """The objects a class call that made an expression's object was handed, perhaps moved or cast after
        (`NN(...).to(device)`); or those a helper whose every `return` hands back such an object handed its
        class call. None when it was not made so. A class is a capitalised name the catalog does not know
        (no wrap, copy, placement or holder), or a summarised class of the project."""
        if value.fresh:
            return value.made_from
        if not isinstance(node, cst.Call):
            return None
        chain = _called_chain(node)
        for outer in chain[:-1]:  # what is done to the new object on the way: a move or a cast keeps it
            method = outer.func.attr.value if isinstance(outer.func, cst.Attribute) else ""
            if method not in cat.METHOD_PLACEMENTS or cat.METHOD_PLACEMENTS[method].kind not in (cat.MOVE, cat.CAST):
                return None
        made = chain[-1]
        callee = dotted_name(made.func)
        if callee is None or not callee.rsplit(".", 1)[-1][:1].isupper():
            return None
        new = value.handle
        if new is not None and (new.sub or new.obj not in self.scope.built_here or len(chain) > 1):
            return None  # an object the analysis knows otherwise (a getter's, a wrap's result)
        qualified = self._qualify(callee)
        if (value.wrapper or value.managed or value.copy_of is not None or value.unpickled or value.holders
                or self.catalog.call_placement(qualified) is not None or self.catalog.holder_kind(qualified) is not None
                or self.catalog.is_managed(qualified) or qualified.split(".", 1)[0] in STANDARD_LIBRARY):
            return None
        handed = (dotted_name(arg.value) for arg in made.args)
        return frozenset(h for inner in handed if inner is not None for h in self._resolve_all(inner))

    def _makes_new_module(self, node: Optional[cst.BaseExpression], value: Value) -> bool:
        """Whether an expression is a module made here, with parameters of its own: a PyTorch module
        class called (`nn.Sequential(...)`), a name bound to one in this function, or a call of a helper
        whose every `return` hands back one it made."""
        if value.new_module:
            return True
        if isinstance(node, cst.Name):
            return node.value in self._new_module_names
        if not isinstance(node, cst.Call):
            return False
        if (isinstance(node.func, cst.Attribute) and node.func.attr.value in cat.METHOD_PLACEMENTS
                and cat.METHOD_PLACEMENTS[node.func.attr.value].kind in (cat.MOVE, cat.CAST)):
            return self._makes_new_module(node.func.value, EMPTY)  # `nn.Linear(4, 2).to(device)`: the same module
        return self._module_class_call(node, spelled=True)

    def _module_class_call(self, call: cst.Call, spelled: bool = False) -> bool:
        """A call of one of PyTorch's module classes (`nn.Linear(16, 4)`), by what its name resolves to
        or, `spelled`, also by how it is written (`nn.Sequential` with an import we do not see)."""
        callee = dotted_name(call.func)
        if callee is None:
            return False
        qualified = self._qualify(callee)
        return ((qualified.startswith(cat.MODULE_NAMESPACES[0]) or (spelled and callee.startswith(cat.MODULE_NAMESPACES)))
                and qualified.rsplit(".", 1)[-1][:1].isupper())

    def _assign_attribute(self, target: cst.BaseExpression, value_node: Optional[cst.BaseExpression],
                          value: Value) -> None:
        dotted = dotted_name(target)
        if dotted is None:
            return
        parts = {handle_key(h) for h in self._resolve_all(dotted) if h.sub}
        if _is_data(value_node, value):
            self._data.update(parts)  # `model.class_weights = weights.to(device) * nc`: data, no submodule
            return
        self._data.difference_update(parts)
        if not isinstance(value_node, cst.Call):
            return
        callee = dotted_name(value_node.func)
        if callee is not None and self.catalog.call_placement(self.imports.qualify(callee)) is not None:
            return  # `model.features = DataParallel(model.features)`: the call is the placement, seen already
        if callee is None:
            callee = code_text(value_node.func)  # `nn.Linear(4, 2).to`: named as the code spells it
        replaced = self._resolve_all(dotted)
        if self._makes_new_module(value_node, value) or self._fresh_object(value_node, value, replaced):
            for handle in replaced:
                if handle.sub:
                    label = f"submodule reassignment `{dotted} = {callee}(...)`"
                    self._emit(PlacementEvent(self._site(target), handle, cat.REPLACE, label))

    def _eval(self, node: cst.BaseExpression) -> Value:
        if isinstance(node, (cst.Name, cst.Attribute)):
            dotted = dotted_name(node)
            if dotted is not None:
                if dotted in self.module_tables.makers and self._is_free(dotted):
                    return Value(makes=self.module_tables.makers[dotted])  # `OPTIMIZERS[name](params)`
                if self._is_library_root(dotted.split(".", 1)[0]):
                    # `torch.optim.AdamW` named, not called (`opt_cls = AdamW if args.adamw else SGD`)
                    return Value(makes=self.catalog.holders.get(self._qualify(dotted)))
                if isinstance(node, cst.Attribute) and node.attr.value in cat.MODULE_SETTING_ATTRIBUTES:
                    return EMPTY  # `head.out_features`: a number, not a part of the module
                carried = self._carried_parameters(dotted) if self._instances else None
                if carried:
                    return Value(params=carried)
                if (isinstance(node, cst.Attribute) and node.attr.value == cat.DEVICE_ATTRIBUTE
                        and dotted not in self.env and not is_self_attribute(dotted)):
                    # `batch.device`, `model.device`: where it is (`self.device` is an attribute instead)
                    return Value(device_of=self._device_value(self._eval(node.value)))
                state = self._state_of(dotted)
                if state:
                    return Value(state_of=state)
                handles = self._resolve_all(dotted)
                binding = self.env.get(dotted) if "." not in dotted or dotted.startswith("self.") else None
                if binding is not None and dotted.count(".") <= 1:
                    value = value_of(binding, handles)
                    if "." not in dotted and not value.callables and self._is_free(dotted):
                        defined = self._defined_callables(dotted)
                        if defined:  # most names are no class of this file: no copy of the value then
                            value = dataclasses.replace(value, callables=defined)
                    return value
                return Value(handles[0], alts=frozenset(handles[1:]), holders=self._kept_holders(dotted),
                             callables=self._defined_callables(dotted) if "." not in dotted else frozenset())
            if isinstance(node, cst.Attribute):
                inner = self._eval(node.value)
                if node.attr.value == cat.DEVICE_ATTRIBUTE:
                    return Value(device_of=self._device_value(inner))  # `next(model.parameters()).device`
                return Value(params=inner.params)
        if isinstance(node, cst.Call):
            return self._eval_call(node)
        if isinstance(node, (cst.Lambda,)):
            return self._lambda_maker(node)  # deferred code: its effects do not happen here
        if isinstance(node, cst.Subscript):
            return self._eval_subscript(node)
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self._eval_comprehension(node)
        if isinstance(node, cst.IfExp):
            self._eval(node.test)
            return join_values([self._eval(node.body), self._eval(node.orelse)])
        return self._eval_parts(node)

    def _eval_parts(self, node: cst.BaseExpression) -> Value:
        """Any other expression, by its parts: a container holds what its elements hold, an operator's
        result the parameters its operands carry."""
        params: FrozenSet[Handle] = frozenset()
        members: FrozenSet[Handle] = frozenset()
        holders: List[HolderEvent] = []
        xla = False
        container = isinstance(node, (cst.List, cst.Tuple, cst.Set, cst.Dict))
        positional = isinstance(node, (cst.List, cst.Tuple)) and all(isinstance(e, cst.Element) for e in node.elements)
        # `self.agent.networks + [self.agent] + [self.qf1, self.qf2]`: a concatenation holds what each list holds
        # (the members of its operands, never the operands themselves: `a + b` of two tensors holds neither)
        joined = isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)
        fields = []
        makers = []
        for child in expression_children(node):
            value = self._eval(child)
            params = params | value.params
            xla = xla or value.xla
            if joined:
                members = members | value.members
            if container:
                members = members | frozenset(value.handles) | value.members
                holders.extend(value.holders)  # `{"deep": deep_opt, "wide": wide_opt}` holds both
                makers.append(value.makes)  # `{"adam": optim.Adam, "sgd": optim.SGD}[name](params)`
            if positional:
                fields.append(value)
        for element in getattr(node, "elements", ()) if container else ():
            if isinstance(getattr(element, "value", None), cst.Lambda):
                # `{"adam": lambda: Adam(net.parameters()), ...}`: a table of makers (deferred code, not run here)
                maker = self._lambda_maker(element.value)
                makers.append(maker.makes)
                params = params | maker.params
        if isinstance(node, cst.SimpleString) and any(m in node.value.lower() for m in cat.REPLACING_DEVICE_MARKERS):
            xla = True
        if positional and len(fields) != len(node.elements):
            fields = []
        callables = callables_in(node, self._defined_callables) if isinstance(node, cst.Dict) else frozenset()
        return Value(params=params, xla=xla, members=members, fields=tuple(fields), callables=callables,
                     holders=unique_holders(holders) if container else (), makes=any_maker(makers),
                     strings=_literal_strings(node) if container else frozenset())

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
        if inner.unpickled:
            # `checkpoint["actor"]`: an object unpickling made, new as its container, which its entries share
            return Value(unpickled=True, unpickled_from=inner.handle.obj if inner.handle is not None else 0)
        if inner.callables:
            return Value(callables=_pick(inner.callables, node))
        if inner.makes is not None:
            return Value(makes=inner.makes, params=inner.params)  # one of a table's optimizer classes (or makers, with what they captured)
        if inner.members:
            return Value(first_handle(inner.members), params=inner.params, alts=inner.members)
        if inner.state_of:
            return Value(state_of=inner.state_of)  # `optimizer.state[p]`, `state["exp_avg"]`
        if inner.handle is not None and not inner.holders:
            return Value(inner.handle, params=inner.params, alts=inner.alts, device_of=inner.device_of,
                         managed=inner.managed)  # `boosted[0]` of a managed call's tuple is the library's too
        return Value(params=inner.params, device_of=inner.device_of)  # `batch[:, 0]` is where `batch` is

    def _eval_comprehension(self, node) -> Value:
        """A comprehension's targets are bound only inside it; its result holds what its element holds."""
        shadowed: Dict[str, Optional[Binding]] = {}
        try:
            clause = node.for_in
            while clause is not None:
                source = self._eval(clause.iter)
                for key in bound_keys(clause.target):
                    shadowed.setdefault(key, self.env.get(key))
                self._bind_target(clause.target, element_of(source))
                for condition in clause.ifs:
                    self._eval(condition.test)
                clause = clause.inner_for_in
            parts = [node.key, node.value] if isinstance(node, cst.DictComp) else [node.elt]
            element = join_values([self._eval(part) for part in parts])
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
            return (EMPTY if isinstance(func, cst.Name) else self._eval(func)), None, False
        method = func.attr.value
        if method in cat.REGROUP_METHODS:
            self.regroups = True
        root = dotted.split(".", 1)[0] if dotted else None
        if root is not None and self._is_library_root(root):
            return EMPTY, method, True
        receiver = self._eval(func.value)
        if method in cat.REGROUP_METHODS and self._arrivals:
            # the function points the optimizers it was handed at the parameters it has now; through
            # whichever name (`for optim in ensure_tuple(optimizers)`), so all of them
            self._emit(ManagedEvent(self._site(call), self._arrivals, f".{method}()"))
        if method in cat.REGROUP_METHODS and receiver.holders:
            self._emit(RegroupEvent(self._site(call), receiver.holders))
        return receiver, method, False

    def _lambda_maker(self, node: cst.Lambda) -> Value:
        """`lambda params: Adam(params, lr=1e-3)`: a callable that builds what its body's callee builds;
        `lambda: Adam(net.parameters())`, with no parameter of its own, builds it on what it captured."""
        body = node.body
        if isinstance(body, cst.Call) and isinstance(body.func, (cst.Name, cst.Attribute)) and not (
                isinstance(body.func, cst.Name) and body.func.value in _lambda_parameters(node)):
            maker = self._eval(body.func).makes
            if maker:
                captured = frozenset() if _lambda_parameters(node) else frozenset().union(
                    *(self._peek_params(arg.value) for arg in body.args if arg.keyword is None or
                      arg.keyword.value == cat.PARAMS_KEYWORD))
                return Value(makes=maker, params=captured)
        return EMPTY

    def _peek_params(self, node: cst.BaseExpression) -> FrozenSet[Handle]:
        """The modules whose parameters an argument a lambda captured carries (`net.parameters()`, a name
        bound to them), read without running it."""
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in cat.PARAMETER_METHODS:
            return frozenset(self._resolve_all(dotted_name(node.func.value) or "")) if dotted_name(node.func.value) else frozenset()
        dotted = dotted_name(node)
        binding = self.env.get(dotted) if dotted else None
        return binding.params if binding is not None else frozenset()

    def _is_library_root(self, root: str) -> bool:
        """A name that means an imported module here: imported and not rebound, or `torch` itself,
        which a star import re-exports without a visible import."""
        return root not in self.env and (self.imports.binds(root) or root == cat.TORCH)

    def _defined_callables(self, name: str) -> Callables:
        """A name of this file's classes or functions, or of a module-level table of them, read where
        nothing here rebinds it; a function defined in the walked one first (it shadows them)."""
        if name in self._local_functions:
            return frozenset({(None, name)})
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

    def _built_on_device(self, call: cst.Call) -> Optional[str]:
        """The device a PyTorch module class call builds its module on, other than the CPU: its `device=`
        argument, or the device of the `with torch.device(...)` it is made in. None for the CPU (the
        default), for the meta device (no storage: `to_empty` replaces what it holds) and for any other call."""
        if not self._makes_new_module(call, EMPTY) or not isinstance(call.func, (cst.Name, cst.Attribute)):
            return None
        given = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == cat.DEVICE_KEYWORD),
                     None)
        device = plain_text(given) if given is not None else self._manager_context
        if device is None or device.strip("'\"") in cat.NOOP_DEVICES | {cat.META_DEVICE} or is_cpu_device(given):
            return None
        return device

    def _note_new_object(self, obj: int, value_node: Optional[cst.BaseExpression], value: Value) -> None:
        """What a new object bound to a name is, by how it was made: a module built on the CPU here, one a
        managed call placed, data, a tensor trained on its own."""
        if self._built_on_cpu(value_node):
            self.scope.built_here.add(obj)
        if value.managed:
            self.scope.placed_by_library.add(obj)
        if _is_data(value_node, value):
            self._data.add(obj)
        if value.leaf:
            self._leaves.add(obj)

    def _handed_objects(self, call: cst.Call) -> Optional[FrozenSet[int]]:
        """The objects a call is handed by name (`Wrapper(net, 3)`: net's); None when an argument is neither
        a name nor a literal (`Wrapper(build(net))`: what it hands is unknown)."""
        objects = set()
        for arg in call.args:
            name = dotted_name(arg.value)
            if name is None:
                if not isinstance(arg.value, _SCALARS):
                    return None
                continue
            binding = self.env.get(name.split(".")[0])
            if binding is not None:
                objects.add(binding.handle.obj)
        return frozenset(objects)

    def _class_call(self, node: Optional[cst.BaseExpression]) -> bool:
        """A call of a class (its name capitalized), PyTorch's module classes included but not its tensor
        classes (`torch.FloatTensor(3)`): what it makes may be a module."""
        callee = dotted_name(node.func) if isinstance(node, cst.Call) else None
        if callee is None or not callee.rsplit(".", 1)[-1][:1].isupper():
            return False
        return not self._qualify(callee).startswith(cat.TORCH + ".") or self._module_class_call(node, spelled=True)

    def _built_on_cpu(self, node: Optional[cst.BaseExpression]) -> bool:
        """`nn.Linear(16, 4)`: a module of PyTorch's own classes made here, with no device given, is
        on the CPU (where a `.cpu()` moves nothing)."""
        if not isinstance(node, cst.Call) or self._built_on_device(node) is not None or any(
                arg.keyword is not None and arg.keyword.value == cat.DEVICE_KEYWORD for arg in node.args):
            return False
        return self._module_class_call(node)

    def _qualify(self, dotted: str) -> str:
        return self.imports.qualify(dotted)

    def _state_of(self, dotted: str) -> FrozenSet[int]:
        """`optimizer.state` (of a name that holds an optimizer, or a parameter a caller hands one in):
        the object whose state it is; `entry.data` of a state entry: the same."""
        key, rest = self._split(dotted)
        binding = self.env.get(key) if rest else None
        if binding is None:
            return frozenset()
        if binding.state_of:
            return binding.state_of
        origin = self.origins.get(binding.handle.obj)
        if rest[-1] == cat.OPTIMIZER_STATE and len(rest) == 1 and (
                binding.holders or (origin is not None and origin.kind in ("param", "self"))):
            return frozenset({binding.handle.obj})
        return frozenset()

    def _kept_holders(self, dotted: str) -> Tuple[HolderEvent, ...]:
        """`strategy.optimizer` of `strategy = Strategy(model, optimizer=opt)` whose constructor keeps
        `self.optimizer = optimizer`: the holders handed in that the attribute keeps."""
        owner, _, attribute = dotted.rpartition(".")
        binding = self.env.get(owner) if owner and self._instances else None
        instance = self._instances.get(binding.handle.obj) if binding is not None else None
        kept = instance.attributes.get(f"self.{attribute}") if instance is not None and instance.handed else None
        if not kept:
            return ()
        return tuple(h for h in self._holders_of({h.obj for h in kept}) if any(h is handed for handed in instance.handed))

    def _holders_of(self, objects) -> Tuple[HolderEvent, ...]:
        """The holders the names of this scope bound to these objects hold, once each."""
        return unique_holders(h for b in self.env.values() if b.handle.obj in objects for h in b.holders)

    def _carried_parameters(self, dotted: str) -> FrozenSet[Handle]:
        """`mp.master_params` of an object built here whose constructor filled it with parameters."""
        owner, _, attribute = dotted.rpartition(".")
        binding = self.env.get(owner) if owner else None
        instance = self._instances.get(binding.handle.obj) if binding is not None else None
        return instance.parameter_attributes.get(f"self.{attribute}", frozenset()) if instance is not None else frozenset()

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
        return value_of(binding, (binding.handle,))

    def _holds_data(self, key: str) -> bool:
        binding = self.env.get(key)
        return binding is not None and binding.handle.obj in self._data

    def _is_holder_handle(self, handle: Handle) -> bool:
        binding = self.env.get(handle.text)
        return binding is not None and binding.holder is not None

    def _bind_augmented(self, target: cst.BaseExpression, value: Value, value_node: cst.BaseExpression) -> None:
        """`params += list(head.parameters())`: the name carries what it had and what is added;
        `group["params"] += [...]` regroups."""
        if _is_params_entry(target):
            self._regroup_entry(target, value_node)
        key = self._key_of(target)
        if key is not None and key in self.env and (value.params or value.members):
            binding = self.env[key]
            self._assign(key, dataclasses.replace(
                binding, params=binding.params | value.params, members=binding.members | value.members))

    def _regroup_entry(self, target: cst.Subscript, value_node: Optional[cst.BaseExpression]) -> None:
        """`optimizer.param_groups[1]["params"] = [...]` (or `+=`): the holders the groups belong to."""
        groups = target.value.value if isinstance(target.value, cst.Subscript) else None
        if isinstance(groups, cst.Attribute) and groups.attr.value == cat.PARAM_GROUPS:
            holders = self._eval(groups.value).holders
            if holders:
                self._emit(RegroupEvent(self._site(value_node or target), holders))

    def _forget_place(self, obj: int) -> None:
        """After a move of an object, a device value read from it before names where it was, not where it
        is. Read before its first move here from an argument (or `self.*`), that is where the caller's
        object was at the call (`original = next(m.parameters()).device; m.to(d); ...; m.to(original)`
        is a round trip for the caller): the value becomes a place of its own with the argument's
        origin. Otherwise it becomes unknown (never wrong)."""
        origin = self.origins.get(obj)
        snapshot = None
        if origin is not None and origin.kind in ("param", "self") and obj not in self._moved:
            snapshot = next(self.ids)
            self.origins[snapshot] = origin  # only ever a device value: no event stands on it
            self._earlier_places.add(snapshot)
        if not self._silent:
            self._moved.add(obj)  # a loop's first walk, for its bindings only, moves nothing yet
        for key, binding in list(self.env.items()):
            if binding.device_of and (obj in binding.device_of or binding.handle.obj == obj):
                place = frozenset()
                if snapshot is not None and obj in binding.device_of:
                    place = (binding.device_of - {obj}) | {snapshot}
                self._assign(key, dataclasses.replace(binding, device_of=place))

    def _held_models(self) -> Iterator[Handle]:
        """What the optimizers this scope's names refer to hold: modules, by use."""
        return (model for binding in self.env.values() for holder in binding.holders for model in holder.models)

    def free_objects(self) -> Dict[str, Handle]:
        """The object each name the walk read and never bound stands for (see `_binding`)."""
        return self._free

    def _held_holders(self) -> Tuple[HolderEvent, ...]:
        """Every holder a name of this scope refers to, and every optimizer handed to it, once each."""
        held = [h for b in self.env.values() for h in b.holders] + list(self._arrivals)
        return tuple({id(h): h for h in held}.values())


def _wrapped_back(old: Binding, value: Value, node: Optional[cst.CSTNode], key: str) -> Value:
    """`optimizer = LARS(optimizer)`: a call handed the optimizer built here first, bound back to its
    name, wraps it; it steps the same parameters, so it is the same holder (types from use: what is
    handed an optimizer to step it is that optimizer). One handed in stays its callers' (see `handled`)."""
    if value.holders or not old.holders or any(h.arrives for h in old.holders) or not isinstance(node, cst.Call):
        return value
    first = next((arg for arg in node.args if arg.keyword is None and not arg.star), None)
    if first is None or dotted_name(first.value) != key:
        return value
    return dataclasses.replace(value, holders=old.holders)


def _constant_entry(target: cst.BaseExpression) -> Optional[Tuple[str, str]]:
    """(name, key) of `name["key"]` as an assignment's target."""
    if (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and len(target.slice) == 1
            and isinstance(target.slice[0].slice, cst.Index)):
        key = literal_key(target.slice[0].slice.value)
        return (target.value.value, key) if key is not None else None
    return None


def _reads_optimizer_entry(node: Optional[cst.BaseExpression]) -> bool:
    """`cfg.get("optimizer", default)` or `cfg["optimizer"]`: a config's entry for the optimizer."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "get" and node.args:
        entry = literal_key(node.args[0].value) if node.args[0].keyword is None else None
    elif isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        entry = literal_key(node.slice[0].slice.value)
    else:
        return False
    return entry is not None and cat.names_optimizer(entry)


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


def is_self_attribute(dotted: str) -> bool:
    return dotted.startswith("self.") and dotted.count(".") == 1


def _is_data(node: Optional[cst.BaseExpression], value: Value) -> bool:
    """A literal, or a container or sum built from nothing that holds a module or its parameters."""
    return isinstance(node, _LITERALS) and not (value.params or value.members or value.holders or value.handle)


def _is_params_entry(target: cst.BaseExpression) -> bool:
    """`<anything>["params"]` as an assignment target."""
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return False
    index = target.slice[0].slice
    return (isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString)
            and index.value.raw_value == cat.PARAMS_KEYWORD)


def is_cpu_device(node: Optional[cst.BaseExpression]) -> bool:
    if isinstance(node, cst.SimpleString):
        return node.value.strip("'\"") == cat.CPU
    if isinstance(node, cst.Call) and dotted_name(node.func) in cat.DEVICE_CONSTRUCTORS and len(node.args) == 1:
        return is_cpu_device(node.args[0].value)
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


class _Names(cst.CSTVisitor):
    """How often each name appears in a function, its nested code included."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter = Counter()

    def visit_Name(self, node: cst.Name) -> None:
        self.counts[node.value] += 1


def _literal_strings(node: cst.BaseExpression) -> FrozenSet[str]:
    """The strings of a list, tuple or set display made of string literals only (none otherwise)."""
    if not isinstance(node, (cst.List, cst.Tuple, cst.Set)) or not node.elements:
        return frozenset()
    found = [literal_key(element.value) if isinstance(element, cst.Element) else None for element in node.elements]
    return frozenset() if None in found else frozenset(found)


def _lambda_parameters(node: cst.Lambda) -> FrozenSet[str]:
    params = node.params
    return frozenset(p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params))


def _called_chain(call: cst.Call) -> List[cst.Call]:
    """The calls an expression's value comes out of: `NN(...).to(device)` is `NN(...)`, then `.to(device)`."""
    chain = [call]
    while isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Call):
        call = call.func.value
        chain.append(call)
    return chain


def _within(inner: Handle, outer: Handle) -> bool:
    """Whether `inner` is `outer` or one of its parts."""
    return inner.obj == outer.obj and inner.sub[:len(outer.sub)] == outer.sub
