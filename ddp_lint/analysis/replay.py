"""A call of a project function, method or class: its summary (analysis/summary.py) replayed at the
call on what the call hands it, in the context its constant arguments decide."""
from __future__ import annotations

import dataclasses
import os
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from .. import catalog as cat
from ..syntax import BUILTIN_NAMES
from .context import call_truths, literal_truth, never_runs, parameter_of
from .events import (Elsewhere, Handle, HolderEvent, ManagedEvent, PlacementEvent, RebindEvent, Site, StateEvent,
                     StateMovedEvent, DroppedEvent, own_conditions)
from .names import FRESH_RECEIVER, callee_name, dotted_name, plain_text, target_elements
from .heap import GLOBAL, MODULE_SCOPE, STAR, Binding, Callables, Origin, Value, EMPTY, handle_key, value_of
from .holders import pairs_with_a_module
from .summary import (ABSENT_HANDED, CallFact, Handling, HandedBuilt, HandedMaker, HelperSummary, Instance,
                      MANAGED_HANDED, NONE_HANDED, UNPICKLED_HANDED, argument_of, split_arguments)


class SummaryReplay:
    """Calls of the project's functions and classes, for `ScopeWalker` (analysis/walker.py)."""

    # the code of an object built and called in one expression, while that call runs (EffectWalker)
    fresh_receiver_text: Optional[str] = None

    def _helper_effect(self, call: cst.Call, dotted: str, args, inherited: bool = False,
                       base: Optional[str] = None) -> Optional[Value]:
        """A call of a function, method or class the analysis has a summary of: its events replayed
        here on what this call hands it, and what it returns. `base`: the base class an inherited call
        names (`Base.__init__(self, ...)`)."""
        owner = dotted.rpartition(".")[0]
        union = self._instance_of(owner) if owner and owner != "self" and not inherited else None
        if union is not None and union.others:
            return self._each_class(call, dotted, args, owner, union)
        if base is not None:
            lookup = getattr(self.method_helpers, "of_base", None)
            summary, instance = (lookup(base, dotted[5:]) if lookup is not None else None), None
        else:
            summary, instance = self._summary_for(dotted, inherited)
        if summary is None:
            return None
        summary = self._in_context(summary, call)
        if self.kwargs_spread is not None and id(call) in self.kwargs_spread:
            self.kwargs_spread[id(call)] = summary.keywords  # this function's `**kwargs`, read there
        if summary.keywords is not None:
            self._drop_unread_keywords(call, summary, args)
        own = dotted.startswith("self.") and instance is None  # a method of this very object
        positional, keywords = split_arguments(args)
        actual = self._actuals(positional, keywords, own, instance,
                               self._resolve_all(dotted.rpartition(".")[0]) if instance is not None else ())
        if inherited and dotted == "self.__init__":
            self._keep_base_attributes(summary, actual, positional, keywords)
        key = self._caller_of(summary, dotted, own, instance, inherited)
        fact = None
        if key is not None:
            constructs = summary.constructed or id(call) in self._built
            fact = CallFact(key, self._placed_before(summary, actual), self._handed(summary, call, positional, keywords),
                            (self.path, call), [] if constructs else None, [] if constructs else None)
            self.calls.append(fact)
        via = f"{summary.name}()"
        if self.dispatching is not None and dotted.startswith("self.") and dotted[5:] in self.dispatching[1]:
            via = f"{self.dispatching[0]}.{summary.name}()"  # the subclass's override runs
        truths = call_truths(summary.decidable, call.args, self.scope.rank_devices) if summary.decidable else {}
        passed = self._replay_ownership(call, summary, args, own, instance, actual, via,
                                        (positional, keywords, truths))
        # the callee's steps and moves replay in its own order: `train_epoch(model, opt)` that moves the
        # model and then steps gives the optimizer its state after the move, not before
        first = min((placed.event.site.order for placed in summary.placements), default=None)
        self._replay_state_calls(call, summary, dotted, own, instance, positional, keywords, via, before=first)
        # an object handed the optimizer when it was built, whose method moves the model it keeps
        # (`strategy = Naive(model=m, optimizer=opt); strategy.train()`): the pair is its API's
        as_optimizers = _handed_optimizers(args, summary)
        handed = as_optimizers + (instance.handed if instance is not None else ())
        module = self._other_module(instance.key if instance is not None and instance.key else summary.key)
        places = self._origin_places(positional, keywords, own)
        early, late = _around_construction(summary) if summary.constructed else (summary, None)
        self._replay_placements(call, early, actual, truths, via, places, handed, module)
        if first is not None:
            self._replay_self_states(call, summary, dotted, own, instance, via, lambda order: order > first)
            self._replay_argument_states(call, summary, positional, keywords, via, lambda order: order > first)
        if summary.moves_state:
            self._replay_state_moves(call, summary, positional, keywords, own, via)
        kept: Dict[str, HolderEvent] = {}
        if own or instance is not None:
            kept = self._replay_self_holders(call, summary, actual, via, "self" if own else dotted.rpartition(".")[0])
            for key, method, _ in summary.kept_states:  # what it did with them before returning
                if key in kept:
                    self._emit(StateEvent(self._site(call, via=via), kept[key], method))
        if summary.methods is not None:
            self._note_instance(call, summary, actual, tuple(h for h in passed if any(h is o for o in as_optimizers)))
        if summary.constructed or id(call) in self._built:
            # a new object: what its constructor built, and what it keeps of the arguments
            built = self._construct(call, summary, actual, truths)
            if fact is not None and fact.after is not None and built.handle is not None:
                self._built_by[built.handle.obj] = fact
            if late is not None:
                self._replay_placements(call, late, actual, truths, via, places, handed, module)
            return built
        if summary.fields:
            return self._returned_fields(call, summary, actual, positional, keywords, kept)
        return self._result_of(call, summary, actual, positional, keywords, via, own, kept)

    def _result_of(self, call: cst.Call, summary: HelperSummary, actual, positional: List[Value],
                   keywords: Dict[str, Value], via: str, own: bool, kept: Dict[str, HolderEvent]) -> Optional[Value]:
        """What a call of a summarised function returns, when it is no new object of a class nor a tuple.
        `kept`: the holders this call kept on the object, by the callee's attribute names."""
        if summary.holder_kept in kept:
            return Value(holders=(kept[summary.holder_kept],))  # the optimizer it keeps, handed back too
        if summary.holder is not None:
            kind, label, models, bucket_view = summary.holder
            handles = frozenset(h for o, s in models for h in actual(o, s))
            if handles:
                event = HolderEvent(self._site(call), kind, f"{summary.name}()", handles, bucket_view=bucket_view)
                self._emit(event)
                return Value(holders=(event,))
        if summary.returned_instances:
            # an object of a summarised class, unless it is an optimizer built on the caller's objects
            # (`return NoamOpt(..., Adam(model.parameters()))`): that holder is what the caller gets
            return self._returned_instance(summary, actual)
        returned = _handed_at(summary, summary.returns_param, positional, keywords)
        if returned is not None:
            return Value(handle=returned.handle, alts=returned.alts)
        if summary.returns_self is not None:
            kept = actual(*summary.returns_self)  # `runner.get_model()`: the model the object keeps
            if kept:
                return Value(handle=kept[0], alts=frozenset(kept[1:]))
        if summary.returned_params:
            # `model.get_optim_policies()` returning `[{"params": self.base.parameters()}, ...]`
            params = frozenset(h for origin, sub in summary.returned_params for h in actual(origin, sub))
            if params:
                return Value(params=params)
        if summary.returned_placements:
            return self._returned_placed(call, summary, via, self._origin_places(positional, keywords, own))
        if summary.returns_new_module:
            return Value(new_module=True)  # `return nn.Sequential(...)`: a module made by this call
        if summary.returns_fresh is not None:
            # `return NN(...)` of a class the analysis has no body of: new, made from what this call hands it
            return Value(fresh=True, made_from=frozenset(h for origin, sub in summary.returns_fresh for h in actual(origin, sub)))
        return None  # nothing known about the result: the generic rules still apply (an abstract stub)

    def _each_class(self, call: cst.Call, dotted: str, args, owner: str, union: Instance) -> Optional[Value]:
        """A method of an object that may be of several classes (what a factory returned): the effect
        of each class's method, as for a call of a value that may be one of several functions."""
        obj = self.env[owner].handle.obj
        results: List[Optional[Value]] = []
        try:
            # each class as an arm of its own: what one does, another does not, on the same run
            for arm, each in enumerate((union._replace(others=()), *union.others)):
                self._instances[obj] = each
                self._with_branch(call, arm, (), lambda: results.append(self._helper_effect(call, dotted, args)))
        finally:
            self._instances[obj] = union
        return next((value for value in results if value is not None), None)

    def _returned_instance(self, summary: HelperSummary, actual) -> Optional[Value]:
        """`backend = pick_backend(model, device)` whose body returns `SingleBackend(model, device)`: an
        object of that class (or of any class it may return), keeping what its constructor kept of the
        objects this call hands in. One that keeps none of them says nothing about them: the result
        stays unknown (and may still be known by its use, as `get_std_opt(params, ...)`'s optimizer)."""

        def kept(table) -> Dict[str, Tuple[Handle, ...]]:
            handles = {key: tuple(dict.fromkeys(h for origin, sub in parts for h in actual(origin, sub)))
                       for key, parts in table.items()}
            return {key: found for key, found in handles.items() if found}

        built = [Instance(each.methods, kept(each.attributes), (), each.locate or summary.locate, each.class_name,
                          {key: frozenset(found) for key, found in kept(each.parameter_attributes).items()})
                 for each in summary.returned_instances]
        keeps = any(each.attributes or each.parameter_attributes for each in built)
        if not keeps and summary.returned_placements:
            return None
        # a new object: built by the call, so on the CPU in float32 until moved or cast, whatever it keeps
        new = Handle(next(self.ids), (), f"{summary.name}()")
        self.scope.built_here.add(new.obj)
        if not keeps:
            return Value(handle=new)  # placed nowhere (`model = get_net(cfg)`): what it is stays unknown
        self._instances[new.obj] = built[0]._replace(others=tuple(built[1:]))
        return Value(handle=new, contains=True)  # a new object, as a constructor's (`_construct`)

    def _in_context(self, summary: HelperSummary, call: cst.Call) -> HelperSummary:
        """The callee's summary for this call's constant arguments, when they decide one of its tests."""
        if summary.in_context is None or not summary.arguments:
            return summary
        truths = call_truths(summary.arguments, call.args, self.scope.rank_devices)
        if not any(parameter_of(key) in summary.tests for key in truths):
            return summary
        special = summary.in_context(truths)
        if special is None:
            return summary
        if (special.locate is None and summary.locate is not None) or (special.key is None and summary.key is not None):
            # the context's walk is the module's own: where it lies is what the caller's summary says
            special = dataclasses.replace(special, locate=special.locate or summary.locate, key=special.key or summary.key)
        return special

    def _keep_base_attributes(self, summary: HelperSummary, actual, positional: List[Value],
                              keywords: Dict[str, Value]) -> None:
        """`super().__init__(model)`: what the base's constructor kept is the object's (`base_kept`);
        in the class's own scope, `self.model` is bound to it for a base of this file (for a base of
        another module it is not: widedeep's fine-tuning wrappers of submodules became false DDP201).
        An optimizer handed on whole (`super().__init__(model, optimizer)`) is the attribute's too: the
        steps the inherited methods take on `self.optimizer` are that optimizer's."""
        for key, (origin, sub) in summary.attributes.items():
            handles = self.base_kept.setdefault(key, actual(origin, sub))
            if self.binds_base_kept and handles and key not in self.env and summary.locate is None:
                attribute = cst.Attribute(cst.Name("self"), cst.Name(key.partition(".")[2]))
                whole = argument_of(origin, positional, keywords) if origin.kind == "param" and not sub else None
                self._bind_target(attribute, Value(handle=handles[0], alts=frozenset(handles[1:]),
                                                   holders=whole.holders if whole is not None else ()))

    def _summary_for(self, dotted: str, inherited: bool) -> Tuple[Optional[HelperSummary], Optional[Instance]]:
        """The summary a call resolves to (a helper of this file, a method of this class or of its bases,
        a class, a method of an object built here from a known class, another module's definition),
        and that object when it is one."""
        summary = None
        if inherited:
            lookup = getattr(self.method_helpers, "inherited", None)
            summary = lookup(dotted[5:]) if lookup is not None else None
        elif "." not in dotted and dotted in self._local_functions and hasattr(self.helpers, "nested"):
            summary = self.helpers.nested(self._local_functions[dotted])
        elif "." not in dotted:
            summary = self.helpers.get(dotted)
            if summary is None and self._is_free(dotted):
                summary = self.constructors.get(dotted)
        elif dotted.startswith("self.") and dotted.count(".") == 1:
            summary = self.method_helpers.get(dotted[5:])
        if dotted.startswith("self.") and dotted.count(".") == 1 and not inherited:
            self.self_calls.add(dotted[5:])
            root = self._function
            if root is not None:
                pair, order = (root.name.value, dotted[5:]), next(self.order)
                self.scope.self_calls[pair] = max(order, self.scope.self_calls.get(pair, order))
        instance = None
        owner, _, method_name = dotted.rpartition(".")
        if summary is None and owner and owner != "self":
            # `engine.prepare()`, `self.engine.prepare()` on an object built here from a known class
            instance = self._instance_of(owner)
            summary = instance.methods(method_name) if instance is not None else None
            if summary is not None and summary.locate is None and instance.locate is not None:
                # a class of another module: its methods are there too
                summary = dataclasses.replace(summary, locate=instance.locate)
            if summary is not None:
                self._note_method_order(owner, instance.class_name, method_name)
        if summary is None and self.project is not None and not dotted.startswith("self."):
            imported = self.imports.imported_name(dotted)
            # a name no import binds may come through a star import (`from deep_rl import *`): a free
            # name of this scope, not a builtin (`len(x)`) nor a local's method (`param.numel()`)
            head = dotted.partition(".")[0]
            starred = self.imports.starred(dotted) if self._is_free(head) and head not in BUILTIN_NAMES else ()
            for full in (imported,) if imported is not None else starred:
                if full not in self.catalog.call_placements and self._qualify(dotted) not in self.catalog.holders:
                    summary = self.project.lookup(full, self.path)
                if summary is not None:
                    break
        return summary, instance

    def _actuals(self, positional: List[Value], keywords: Dict[str, Value], own: bool, instance: Optional[Instance],
                 receiver: Tuple[Handle, ...] = ()):
        """What a summary's origin (a parameter, `self.x`) is at this call: the caller's objects; an
        attribute the object did not keep from its constructor's arguments is a part of the object."""

        def actual(origin: Origin, sub: Tuple[str, ...]) -> Tuple[Handle, ...]:
            if origin.kind == GLOBAL:
                # the module's object of that name: bound at the module's top level, read as a global of
                # its own by a calling function (even one whose local of that name shadows it)
                handles = self._resolve_all(origin.key) if self.scope.name == MODULE_SCOPE else (self._global(origin.key),)
                return tuple(Handle(h.obj, h.sub + sub, h.text) for h in handles)
            if origin.kind == STAR:  # `to_device(device, policy, critic)` into `*args`: each of them
                return tuple(Handle(h.obj, h.sub + sub, h.text) for value in positional[origin.index:] for h in value.handles)
            if origin.kind == "param":
                value = argument_of(origin, positional, keywords)
                if value is None:
                    return ()
                # a container handed in (`MultiHead([cls_head, box_head])`): what the callee does to
                # what it holds, it does to the modules it holds; parameters handed in (`make_optimizer(
                # model.parameters())`): the modules they are of
                handles = (value.handles or tuple(sorted(value.members, key=handle_key))
                           or tuple(sorted(value.params, key=handle_key)))
                return tuple(Handle(h.obj, h.sub + sub, h.text) for h in handles)
            if origin.kind == "self" and own:
                return tuple(Handle(base.obj, base.sub + sub, origin.key) for base in self._resolve_all(origin.key))
            if origin.kind == "self" and instance is not None:
                # `engine.prepare()` moving `self.model`: the model the caller handed to `Engine(...)`
                if origin.key == "self":  # the object itself (`self.to(device)` in `engine.place()`)
                    return tuple(Handle(h.obj, h.sub + sub, h.text) for h in receiver)
                kept = instance.attributes.get(origin.key, ())
                if not kept and origin.key.startswith("self."):
                    return tuple(Handle(h.obj, h.sub + (origin.key[5:],) + sub, h.text) for h in receiver)
                # through an object the object keeps (`self.trainer.networks` of the caller's trainer)
                return tuple(p for h in kept for p in (self.kept_parts(h, sub, None) if sub else (h,)))
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
            held = self._held_holders() + (instance.handed if instance is not None else ())
            if held:
                self._emit(ManagedEvent(self._site(call, via=via), held, via))
        return passed

    def _replay_handled(self, call: cst.Call, summary: HelperSummary, at_call, passed: Tuple[HolderEvent, ...],
                        via: str) -> None:
        """The callee's handling of what it was handed (`HelperSummary.handled`), with its conditions:
        for this function's callers, and as the end of the order of the optimizers this call rebinds."""
        positional, keywords, truths = at_call
        for origin, inner in summary.handled:
            value = argument_of(origin, positional, keywords)
            if value is None or never_runs(inner.guards + inner.inner, truths):
                continue
            site = dataclasses.replace(self._site(call, via=via), branches=self._branches + inner.branches,
                                       inner=own_conditions(inner.guards + inner.inner, _on_self(call)))
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
                self.handled.append(Handling(origin, site))

    def _replay_state_calls(self, call: cst.Call, summary: HelperSummary, dotted: str, own: bool,
                            instance: Optional[Instance], positional: List[Value], keywords: Dict[str, Value],
                            via: str, before: Optional[int] = None) -> None:
        """The callee's `step()` / `load_state_dict()` on the optimizers it reaches (its object's own,
        or those handed to it) that come before its first placement (the rest replay after it)."""
        def chosen(order: int) -> bool:
            return before is None or order < before

        self._replay_self_states(call, summary, dotted, own, instance, via, chosen)
        self._replay_argument_states(call, summary, positional, keywords, via, chosen)

    def _replay_self_states(self, call: cst.Call, summary: HelperSummary, dotted: str, own: bool,
                            instance: Optional[Instance], via: str, chosen) -> None:
        if instance is not None:
            built = self.env.get(dotted.rpartition(".")[0])
            for key, method, order in summary.state_calls:  # `trainer.resume(path)` loading `self.opt`
                for holder in built.holders if built is not None and chosen(order) else ():
                    if holder.attribute == key[5:]:
                        self._emit(StateEvent(self._site(call, via=via), holder, method))
        if own:
            for key, method, order in summary.state_calls:
                binding = self.env.get(key) if chosen(order) else None
                for holder in binding.holders if binding is not None else ():
                    self._emit(StateEvent(self._site(call, via=via), holder, method))
                if chosen(order) and not self._silent:
                    # its callers' too: on the holder this function keeps there, or on what they keep
                    kept = binding is not None and binding.holders
                    (self.kept_states if kept else self.state_calls).append((key, method, next(self.order)))

    def _replay_argument_states(self, call: cst.Call, summary: HelperSummary, positional: List[Value],
                                keywords: Dict[str, Value], via: str, chosen) -> None:
        for origin, method, order in summary.argument_state_calls:
            if not chosen(order):
                continue
            value = argument_of(origin, positional, keywords)
            for holder in value.holders if value is not None else ():
                self._emit(StateEvent(self._site(call, via=via), holder, method))

    def _replay_placements(self, call: cst.Call, summary: HelperSummary, actual, truths: Dict[str, bool],
                           via: str, places, handed: Tuple[HolderEvent, ...] = (), module: str = "") -> None:
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
                                       inner=own_conditions(event.site.guards + event.site.inner, _on_self(call)))
            source = event.source or event.site.node
            elsewhere = event.elsewhere or (Elsewhere(summary.locate, source) if summary.locate else None)
            passed = _argument_at_call(call, summary.param_names, event.argument_text)
            argument = plain_text(passed) if passed is not None else event.argument_text
            kind = cat.HOME if event.kind == cat.MOVE and passed is not None and self._is_cpu(passed) else event.kind
            for handle in handles:
                self._emit(PlacementEvent(site, handle, kind, event.label, event.sync_wrapper, event.ddp,
                                          argument, event.operation, elsewhere=elsewhere,
                                          unknown_keyword=event.unknown_keyword, synced=event.synced,
                                          device_of=device, handed_optimizers=handed, callee_module=module,
                                          source=None if elsewhere is not None else source,
                                          inherited_from=self._inherited_from, applied_last=event.applied_last,
                                          beside=event.beside or (event.applied_last and self._bound_beside(call))))

    def _returned_placed(self, call: cst.Call, summary: HelperSummary, via: str, places, placements=None) -> Value:
        """A new object the callee moved or cast before it returned it (`return Model(**cfg).to(device)`):
        made by this call, and placed so here, where the caller's device value says."""
        new = Handle(next(self.ids), (), f"{summary.name}()")
        self.scope.built_here.add(new.obj)
        for event in summary.returned_placements if placements is None else placements:
            passed = _argument_at_call(call, summary.param_names, event.argument_text)
            source = event.source or event.site.node
            elsewhere = event.elsewhere or (Elsewhere(summary.locate, source) if summary.locate else None)
            self._emit(PlacementEvent(self._site(call, via=via), new, event.kind, event.label,
                                      argument_text=plain_text(passed) if passed is not None else event.argument_text,
                                      operation=event.operation, elsewhere=elsewhere,
                                      device_of=places(event.device_origins) if event.device_origins else frozenset(),
                                      source=None if elsewhere is not None else source, at_birth=True))
        return Value(handle=new)

    def _drop_unread_keywords(self, call: cst.Call, summary: HelperSummary, args) -> None:
        """`Trainer(model, optimizer=AdamW(...))` whose `**kwargs` never reads `optimizer` (it takes
        `optimizers`): the optimizer built right there is handed to nobody."""
        built = [e for e in self.scope.events[self._args_from:] if isinstance(e, HolderEvent)]
        for arg, value in args:
            if arg.keyword is None or arg.keyword.value in summary.keywords:
                continue
            dropped = tuple(h for h in value.holders if any(h is b for b in built) and self.scope.name_of(h) is None)
            if dropped:
                self._emit(DroppedEvent(self._site(call), dropped))

    def _replay_state_moves(self, call: cst.Call, summary: HelperSummary, positional: List[Value],
                            keywords: Dict[str, Value], own: bool, via: str) -> None:
        """`optimizer_to(optimizer, device)`: the state of the optimizers handed in follows the model."""
        for origin in summary.moves_state:
            if origin.kind == "param":
                value = argument_of(origin, positional, keywords)
            else:
                binding = self.env.get(origin.key) if own else None
                value = value_of(binding, (binding.handle,)) if binding is not None else None
            if value is not None and (value.holders or value.handle is not None):
                self._emit(StateMovedEvent(self._site(call, via=via), value.holders,
                                           frozenset({value.handle.obj}) if value.handle is not None else frozenset()))

    def _origin_places(self, positional: List[Value], keywords: Dict[str, Value], own: bool):
        """A summary's device value at this call: where the arguments (or this object's attributes) it
        was read from are; unknown when one of them is."""

        def places(origins) -> FrozenSet[int]:
            found: set = set()
            for origin in origins:
                if origin.kind == "param":
                    value = argument_of(origin, positional, keywords)
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

    def _replay_self_holders(self, call: cst.Call, summary: HelperSummary, actual, via: str,
                             owner: str) -> Dict[str, HolderEvent]:
        """A method of this object, or of an object of a summarised class (`model.initialize(opt)`), that
        keeps an optimizer on it (`self.optimizer = SGD(...)`): the object's attribute, as the
        constructor's are (the pair it makes with another method of the object is its class's). Returns
        the holders made, by the callee's attribute names."""
        made: Dict[str, HolderEvent] = {}
        for kind, label, models, bucket_view, var in summary.self_holders:
            kept_as = var
            handles = frozenset(h for o, sub in models for h in actual(o, sub))
            if owner != "self":
                var = f"{owner}.{var[len('self.'):]}"
            if handles:
                within = label if " in " in label else f"{label} in {via}"  # said once, where it is built
                shown = var
                if owner == FRESH_RECEIVER and self.fresh_receiver_text is not None:
                    shown = self.fresh_receiver_text + var[len(owner):]  # `Agent(net).opt`, as the code spells it
                event = HolderEvent(self._site(call, via=via), kind, within, handles, var=shown,
                                    bucket_view=bucket_view, attribute=var[len(owner) + 1:] if owner != "self" else "")
                self._emit(event)
                old = self.env.get(var)
                for previous in old.holders if old is not None else ():
                    # `self.compile(self.lr)` in `fit()` after its move: the optimizer is rebuilt
                    self._emit(RebindEvent(self._site(call, via=via), previous, event))
                self._assign(var, Binding(Handle(next(self.ids), (), var), holders=(event,)))
                made[kept_as] = event
        return made

    def _note_instance(self, call: cst.Call, summary: HelperSummary, actual, passed: Tuple[HolderEvent, ...]) -> None:
        """An object built from a summarised class: what its attributes keep of the arguments, so that
        its methods called later (`engine.prepare()`) and its own moves reach them. `passed`: the
        optimizers handed as its optimizers, not those of another object handed to it (`Algorithm(trainer)`
        whose `to()` moves the networks of a trainer that built its optimizers: that order is the caller's)."""
        kept = {key: actual(origin, sub) for key, (origin, sub) in summary.attributes.items()}
        kept = {key: handles for key, handles in kept.items() if handles}
        # claimed by the name it is assigned to; the optimizers handed in are the object's too
        # holders built inside the arguments count too, even in a list (`State(model, [AdamW(...)])`)
        made = (e for e in self.scope.events[self._args_from:] if isinstance(e, HolderEvent))
        handed = tuple({id(h): h for h in (*passed, *made)}.values())
        carried = {key: frozenset(h for origin, sub in entries for h in actual(origin, sub))
                   for key, entries in summary.parameter_attributes.items()}
        self._built[id(call)] = Instance(summary.methods, kept, handed, summary.locate, summary.name,
                                         {key: params for key, params in carried.items() if params},
                                         key=self._callee_key(summary, summary.name))

    def _call_callables(self, call: cst.Call, callables: Callables, args) -> Optional[Value]:
        """A call of a value that is one of this file's classes or functions (`self.placer_class(net)`):
        the effect of each one it may be, and what the first known one returns."""
        result = None
        for name in sorted({name for _, name in callables}):
            value = self._helper_effect(call, name, args)
            if result is not None and result.holders and value is not None and value.holders:
                # `MAKERS[name](params)`: whichever one runs, the call builds one optimizer, named by the first
                self.scope.events[:] = [e for e in self.scope.events if not any(e is h for h in value.holders)]
            result = result or value
        return result

    def _returned_fields(self, call: cst.Call, summary: HelperSummary, actual, positional: List[Value],
                         keywords: Dict[str, Value], kept: Dict[str, HolderEvent]) -> Value:
        """`opt, sched = training_state(model, cfg)`: the tuple the helper returns, position by position,
        with the holders built at this call on what the caller handed in."""
        # a module the callee made, beside an optimizer on it: made by this call, placed as the callee placed it
        places = self._origin_places(positional, keywords, False)
        made = {position: self._returned_placed(call, summary, f"{summary.name}()", places, entry.what).handle
                for position, entry in enumerate(summary.fields) if entry is not None and entry.kind == "new"}

        def at_call(origin: Origin, sub: Tuple[str, ...]) -> Tuple[Handle, ...]:
            if origin.kind == "field":  # a module the call made, at another position of the tuple
                return (Handle(made[origin.index].obj, sub, made[origin.index].text),) if origin.index in made else ()
            return actual(origin, sub)

        values = []
        for position, entry in enumerate(summary.fields):
            value = EMPTY
            if position in made:
                value = Value(handle=made[position])
            elif entry is not None and entry.kind == "holder" and entry.kept in kept:
                value = Value(holders=(kept[entry.kept],))  # the optimizer it keeps, handed back too
            elif entry is not None and entry.kind == "holder":
                kind, label, models, bucket_view = entry.what
                handles = frozenset(h for o, s in models for h in at_call(o, s))
                if handles:
                    event = HolderEvent(self._site(call), kind, f"{summary.name}()", handles, bucket_view=bucket_view)
                    self._emit(event)
                    value = Value(holders=(event,))
            elif entry is not None and entry.kind == "param" and (
                    returned := _handed_at(summary, entry.what, positional, keywords)) is not None:
                value = Value(handle=returned.handle, alts=returned.alts)
            elif entry is not None and entry.kind == "managed":
                value = Value(managed=True)
            values.append(value)
        for position, entry in enumerate(summary.fields):
            if entry is not None and entry.kind == "wrapper" and values[entry.what[1]].handle is not None:
                inner = values[entry.what[1]]
                values[position] = Value(handle=inner.handle, alts=inner.alts, wrapper=entry.what[0])
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
                    self._emit(ManagedEvent(self._site(call), arrived, f"{callee_name(call.func)}()"))

    def _handed(self, summary: HelperSummary, call: cst.Call, positional: List[Value],
                keywords: Dict[str, Value]) -> Dict[str, object]:
        """What this call hands each parameter that may receive an optimizer, for the callee side: NONE
        (a literal `None` or falsy, or a falsy default left as it is), ABSENT (another default left as it
        is), MANAGED (what a managed call returned), or ("arrived", the key and the name of this
        function's own parameter it forwards), or nothing said."""
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
                elif value.managed:
                    handed[name] = MANAGED_HANDED
                elif value.unpickled:
                    handed[name] = UNPICKLED_HANDED
                elif origin is not None and origin.kind == "param" and self.arrival_key is not None and not value.handle.sub:
                    handed[name] = ("arrived", self.arrival_key, origin.key)  # forwards what its callers hand it
                elif value.makes:
                    handed[name] = HandedMaker(value.makes)
                elif built := next((h for h in value.holders if h.site.via is None and not h.attribute), None):
                    # built in the call's own argument list: the call is where it is built
                    handed[name] = HandedBuilt(None if built.site.node is node else built.site.node, built.label,
                                               self._holding(summary, built, positional, keywords, spread))
            elif node is None and not spread:
                handed[name] = ABSENT_HANDED  # the default: no optimizer of this caller's
        return handed

    def _holding(self, summary: HelperSummary, built: HolderEvent, positional: List[Value],
                 keywords: Dict[str, Value], spread: bool) -> Optional[FrozenSet[str]]:
        """The parameters a call hands an object that holds (or is) what the optimizer holds: the object
        itself, its parts, what its class kept or a class call here was handed; None when unknown."""
        if spread:
            return None
        held = {model.obj for model in built.models}
        holding = set()
        for index, name in enumerate(summary.param_names):
            value = positional[index] if index < len(positional) else keywords.get(name)
            if value is None or value.handle is None:
                continue
            inside = self._contained(value)
            if inside is None:
                return None
            if inside & held:
                holding.add(name)
        return frozenset(holding)

    def _contained(self, value: Value) -> Optional[Set[int]]:
        objects = {h.obj for h in value.handles} | {m.obj for m in value.members}
        for obj in list(objects):
            instance = self._instances.get(obj)
            if instance is not None:
                objects.update(h.obj for handles in instance.attributes.values() for h in handles)
            if obj in self.scope.class_made:
                made = self.scope.class_made[obj]
                if made is None:
                    return None  # a class call handed what is unknown: it may keep the held module
                objects.update(made)
        return objects

    def _caller_of(self, summary: HelperSummary, dotted: str, own: bool, instance: Optional[Instance],
                   inherited: bool) -> Optional[Tuple[str, str]]:
        """(path, name) of the definition whose callers this call counts among (see `calls`); None for a
        call of this object's own method, or through an object of no known class."""
        if (not own and instance is None) or (inherited and summary.key is not None):
            key = self._callee_key(summary, dotted)
            if key[1].endswith(".__init__"):
                key = (key[0], key[1][: -len(".__init__")])  # a constructor's callers call its class
            return key
        if instance is not None and instance.key is not None and not inherited:
            # `trainer.resume(model, opt)` on an object of a known class: a caller of `Trainer.resume`
            return instance.key[0], f"{instance.key[1]}.{dotted.rpartition('.')[2]}"
        return None

    def _other_module(self, key: Optional[Tuple[str, str]]) -> str:
        """The path of a summary's or instance's module when it is not this one ("" when it is)."""
        here = os.path.abspath(self.path) if self.path else ""
        return key[0] if key is not None and key[0] != here else ""

    def _callee_key(self, summary: HelperSummary, dotted: str) -> Tuple[str, str]:
        """(path, name) of what a call calls, as its callee side names its arrivals: another module's
        definition by its summary's key, one of this file by the name it is called through."""
        return summary.key or (os.path.abspath(self.path) if self.path else "", dotted)

    def _placed_before(self, summary: HelperSummary, actual) -> FrozenSet[Tuple[str, str, str]]:
        """The callee's placements of its arguments that this scope had already made on what it passes:
        moving a model that is already on a device (not the CPU) there again, or casting it to the
        dtype it has, is a round trip."""
        done = set()
        earlier = [e for e in self.scope.events if isinstance(e, PlacementEvent)]
        for origin, sub, event in summary.placements:
            # an argument, or what the object keeps (`solver.fit()` moving the model `Solver(model)` kept)
            handles = actual(origin, sub) if origin.kind in ("param", "self") else ()
            if handles and all(any(_same_place(prior, event) and prior.handle.covers(h) for prior in earlier)
                               for h in handles):
                done.add(placement_signature(event))
        return frozenset(done)

    def _rebinds_passed_holder(self, call: cst.Call, passed) -> bool:
        """Whether the statement holding `call` assigns its result to a name holding one of `passed`: the
        name the holder was first bound to, or one it is handed in under (`self.optimizer`)."""
        statement = self._chain[-1] if self._chain else None
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        names = {self.scope.name_of(holder) for holder in passed} - {None}
        for arg in call.args:
            held = self.env.get(dotted_name(arg.value) or "")
            if held is not None and any(h is p for h in held.holders for p in passed):
                names.add(dotted_name(arg.value))
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
                # named where it is built: a holder of an object this one keeps already says whose constructor
                within = label if " in " in label else f"{label} in {summary.name}.__init__"
                event = HolderEvent(self._site(call), kind, within, handles,
                                    bucket_view=bucket_view, attribute=attribute)
                self._emit(event)
                holders.append(event)
        instance = self._instances.get(new.obj)
        if instance is not None and instance.handed and not holders and instance.methods(cat.STEP) is not None:
            # an object handed an optimizer whose class steps (`NoamOpt(d, k, warmup, Adam(...))`, a warmup
            # wrapper) is that optimizer, wrapped, and holds what it holds; one that also keeps the model
            # the optimizer holds is a trainer, which steps it among other work
            held = {model.obj for holder in instance.handed for model in holder.models}
            if not any(h.obj in held for kept in instance.attributes.values() for h in kept):
                return Value(new, holders=instance.handed, contains=True)
        return Value(new, holders=tuple(holders), contains=True)


def _around_construction(summary: HelperSummary) -> Tuple[HelperSummary, Optional[HelperSummary]]:
    """The constructor's placements of what its caller handed it, split at the first holder it builds:
    those after it replay after the new object's holders, in the callee's own order (`Solver(model)`
    whose `__init__` builds the optimizer and then moves the model orders the two halves itself)."""
    first = min((inner.site.order for inner, *_ in summary.constructed if isinstance(inner, HolderEvent)), default=None)
    if first is None or all(placed.event.site.order < first for placed in summary.placements):
        return summary, None
    return (dataclasses.replace(summary, placements=[p for p in summary.placements if p.event.site.order < first]),
            dataclasses.replace(summary, placements=[p for p in summary.placements if p.event.site.order > first]))


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


def _handed_at(summary: HelperSummary, index: Optional[int], positional: List[Value],
               keywords: Dict[str, Value]) -> Optional[Value]:
    """What a call hands the parameter at `index`, by position or by its name (`init_opt(encoder=encoder)`)."""
    if index is None:
        return None
    if index < len(positional):
        return positional[index]
    return keywords.get(summary.param_names[index]) if index < len(summary.param_names) else None


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
    if not takes or not (pairs_with_a_module(param_names + summary.kwargs_keys) or summary.declared_modules):
        return ()  # (a callee that takes no module it could pair the optimizer with cannot report the pair)
    handed: List[HolderEvent] = []
    positional, _ = split_arguments(args)
    for index, value in enumerate(positional[: len(param_names)]):
        if param_names[index] in takes:
            handed.extend(value.holders)
    for arg, value in args:
        if arg.keyword is not None and arg.keyword.value in takes:
            handed.extend(value.holders)  # `optimizers={"deep": deep_opt, "wide": wide_opt}` too
    return tuple(handed)


def _on_self(call: cst.Call) -> bool:
    """`self.method(...)`: the callee runs on the caller's own object."""
    return isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and call.func.value.value == "self"
