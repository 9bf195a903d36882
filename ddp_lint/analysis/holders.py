"""Holders: where an optimizer (or another parameter holder) is built, by a known class, a factory, or
a call whose result is used as one (types from use), and where one arrives built in a parameter."""
from __future__ import annotations

import re
from typing import Dict, FrozenSet, List, NamedTuple, Optional, Set, Tuple

import libcst as cst

from .. import catalog as cat
from .events import Handle, HolderEvent, Site
from .names import callee_name, dotted_name, keyword_is_true, plain_text
from .uses import OPTIMIZER_KEYWORD, use_key
from .aliases import expand
from .heap import Binding, Value, EMPTY
from .bindings import is_self_attribute

# Among several arguments of an optimizer factory, these name the module; the others are settings.
MODEL_NAME = re.compile(r"model|net|module|encoder|decoder|backbone", re.IGNORECASE)
# An argument named like an optimizer: a call handed one uses it rather than builds one.
_OPTIMIZER_ARGUMENT = re.compile(r"(?:^|[._])(?:optim|optimizer|optimizers|opt)$", re.IGNORECASE)
_ROLE_WORDS = re.compile(r"(?i)optimi[sz]ers?|optims?|models?|networks?|nets?|modules?|backbones?|generators?"
                         r"|discriminators?|polic(?:y|ies)")


class HolderWalker:
    """Where `ScopeWalker` (analysis/walker.py) finds a holder built or handed in."""

    type_alias = None  # see ScopeWalker.type_alias

    def _optimizers_arrive(self, function: cst.FunctionDef, bound, label: str, key: Tuple[str, str],
                           is_method: bool = False) -> None:
        optimizers, models = [], []
        annotated_only: List[Handle] = []  # modules by their annotation, not named as a model (`loss_fn`)
        names: List[Tuple[FrozenSet[str], FrozenSet[str]]] = []  # walked only when a parameter needs it
        for param, handle in bound:
            annotation = plain_text(param.annotation.annotation) if param.annotation is not None else ""
            annotation = "" if cat.declares_nothing(annotation) else annotation
            if annotation and self.type_alias is not None:
                annotation = expand(annotation, self.type_alias)  # `Optional[Instance[Optimizer]]`
            string_default = has_string_default(param)
            # an annotation says what the parameter is; the file's uses speak only for one without
            if annotation and self._names_plain_classes(annotation):
                continue  # `optimizer: Optimizer` of a project class with no bases: settings, not torch's
            # a string default declares a name (`optimizer="adam"`), whatever the file does with an optimizer
            if cat.receives_optimizer(param.name.value, annotation, string_default) or (
                    not annotation and not string_default and self._used_as_optimizer_alone(param.name.value)):
                if not names:
                    names.append(body_names(function))
                called, kept = names[0].called, names[0].kept
                if param.name.value in called:
                    continue  # the body calls it: a factory (`optimizer(self.model.parameters())`), built later
                if not annotation and param.name.value not in kept and not self._named_optimizer_is_used(param.name.value):
                    continue  # only its name says optimizer, nothing in the file uses it as one, nor keeps it
                optimizers.append((param.name.value, handle))
            elif cat.receives_model(param.name.value, annotation) or self._annotated_module_class(annotation):
                models.append(handle)
                if annotation and not cat.receives_model(param.name.value):
                    annotated_only.append(handle)
        # `q_func1_optimizer` beside a `q_func1` parameter: the optimizer's name names the module it
        # holds, though nothing else says that parameter is a module
        by_name = {param.name.value.lower(): handle for param, handle in bound
                   if all(handle is not h for _, h in optimizers)}
        for name, _ in optimizers:
            named = _named_by(_qualifier(name), by_name)
            if named is not None and named not in models:
                models.append(named)
        if optimizers and not models and is_method:
            # `def train(self, optimizer, loader)` of an object that keeps its model (`self.model`): the
            # optimizer handed to the object's method trains the modules the object keeps
            models = self._kept_modules()
        if optimizers and not models:
            if not names:
                names.append(body_names(function))
            models = self._trained_parameters(bound, optimizers, names[0].kept_as)
        if not optimizers or not models:
            return
        for name, handle in optimizers:
            # `sharded_optimizer` with `org_model` and `sharded_model`, `optimizer_g` with `net_g`: the
            # model its name pairs it with; any of them when none pairs
            own = _qualifier(name)
            paired = [m for m in models if _pairs(own, _qualifier(m.text))]
            if not paired and annotated_only and len(annotated_only) < len(models):
                # `train(model: nn.Module, loss_fn: nn.Module, optimizer: Optimizer)`: the module named
                # as the model is what the optimizer trains, not the loss annotated as a module too
                paired = [m for m in models if all(m is not a for a in annotated_only)]
            if not paired and len(models) > 1 and self.optimizer_uses is not None:
                # types from use: the modules whose outputs reach the `.backward()` before its steps
                # (`self.student(batch).sum().backward(); self.optimizer.step()`), not the teacher
                trained = self.optimizer_uses().trains(use_key(name))
                paired = [m for m in models if use_key(m.text) in trained]
            event = HolderEvent(Site(next(self.order), function, (function,)), cat.LAZY, "parameter",
                                frozenset(paired or models), var=name, arrives=label, arrives_key=key)
            self._emit(event)
            self._assign(name, Binding(handle, holders=(event,)))
            self._arrivals += (event,)

    def _trained_parameters(self, bound, optimizers, kept_as: Dict[str, FrozenSet[str]]) -> List[Handle]:
        """Types from use, where no name or annotation says which parameter is the model: the one whose
        module the file's training code calls in what a `.backward()` runs on before the handed optimizer
        steps (`out = self.dualrnn(mix)` ... `self.optimizer.step()`), by its own name or the attribute the
        function keeps it in (`kept_as`, `body_names`: `self.dualrnn = Dual_RNN.to(self.device)`)."""
        if self.optimizer_uses is None:
            return []
        trained = set().union(*(self.optimizer_uses().trains(use_key(name)) for name, _ in optimizers))
        if not trained:
            return []
        chosen = {handle for _, handle in optimizers}
        return [handle for param, handle in bound if handle not in chosen
                and ({use_key(param.name.value)} | kept_as.get(param.name.value, frozenset())) & trained]

    def _annotated_module_class(self, annotation: str) -> bool:
        """Types from declarations: `encoder: ModelWithoutAttention`, a class of the project (or an alias
        of a union of them) derived from torch's module class, is a module however it is named."""
        name = annotation.strip("\"' ")
        if self.project is None or not name or not name.replace(".", "_").isidentifier():
            return False
        return self.project.names_module_class(self.imports.imported_name(name) or name, self.path)

    def _names_plain_classes(self, annotation: str) -> bool:
        """Types from declarations: an annotation whose optimizer classes are all classes of the project
        with no bases (deepchem's `Optimizer(object)`, a config that builds the torch one later) names
        no torch optimizer, which is always a subclass of one."""
        names = cat.optimizer_annotation_names(annotation)
        if not names or self.project is None:
            return False
        return all(self.project.is_plain_class(self.imports.imported_name(name) or "", self.path) for name in names)

    def _kept_modules(self) -> List[Handle]:
        """The modules this object keeps under a model's name (`self.model`, `self.model_S`), as its
        constructor and earlier methods left them, or as its base's constructor kept them."""
        for key in self.base_kept:
            if key not in self.env and is_self_attribute(key) and cat.receives_model(key[5:].lstrip("_")):
                self._binding(key)  # the object's own, whatever the callers handed its base
        return [binding.handle for key, binding in self.env.items()
                if is_self_attribute(key) and cat.receives_model(key[5:].lstrip("_")) and not binding.holders
                and binding.handle.obj not in self._data and binding.handle.obj not in self._leaves]

    def _used_as_optimizer_alone(self, name: str) -> bool:
        """Types from use: a parameter of any name is an optimizer when the file uses it as nothing else
        is used (`updater.zero_grad()` and `updater.step()`; analysis/uses.py)."""
        return self.optimizer_uses is not None and use_key(name) in self.optimizer_uses().alone

    def _named_optimizer_is_used(self, name: str) -> bool:
        """Types from use, on the callee side: a parameter known as an optimizer by its name alone is
        one when the file uses that name (or the attribute it is kept in) as an optimizer."""
        return self.optimizer_uses is None or use_key(name) in self.optimizer_uses().names

    def _built_holder(self, call: cst.Call, dotted: Optional[str], receiver: Value, args) -> Optional[Value]:
        """A call that builds an optimizer (or another holder): a known class or factory, or a callable
        that makes one (`getattr(torch.optim, name)`, `type(optimizer)`)."""
        maker = self._optimizer_class(call, dotted, args) or receiver.makes
        captured = receiver.params if receiver.makes else frozenset()
        if maker is None and dotted is not None and "." not in dotted and dotted in self.env:
            maker, captured = self.env[dotted].makes, self.env[dotted].params
        if maker is None:
            return None
        if dotted in cat.CLASS_HANDING_CALLS:
            return Value(makes=maker)
        if dotted:
            label = f"{dotted}()"
        elif isinstance(call.func, cst.Subscript):
            label = f"{callee_name(call.func)}[...]()"  # `torch.optim.__dict__[name](...)`
        else:
            label = f"{callee_name(call.func)}()"
        if captured and not any(value.params for _, value in args):
            # `{"adam": lambda: Adam(net.parameters())}[name]()`: the parameters the callable captured
            args = [*args, (cst.Arg(cst.Name("_")), Value(params=captured))]
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
            receiver = EMPTY  # a config or builder object, not the model
        elif (cat.HOLDER_TERMINALS.get(terminal) != cat.FACTORY and not any(value.params for _, value in args)
              and not self._used_as_optimizer(call)):
            return None  # only its name says optimizer (`optim_context()`, `_test_optimizer()`)
        if any(value.holders for _, value in args) and self.catalog.is_managed(dotted):
            return None
        if self._no_class_defines(dotted, terminal, receiver):
            return None
        return self._holder(call, cat.FACTORY, f"{terminal}()", args, receiver)

    def _no_class_defines(self, dotted: str, terminal: str, receiver: Value) -> bool:
        """`model.get_optimizer_and_scheduler(cfg)` on a model this function was handed: a method of the
        model's class, and the model's classes are the project's. When no module of the project defines
        a method of that name (and the catalog names none), no call here builds an optimizer (VQ-Diffusion's
        optional hook behind `hasattr(model, ...)`). Only for a receiver that reads as the model and is
        neither `self`'s nor an imported name's: a library object (a trainer) has methods of its own."""
        root = dotted.split(".", 1)[0]
        if (self.project is None or dotted.count(".") != 1 or root in ("self", "cls", "super") or self.imports.binds(root)
                or receiver.handle is None or receiver.holders or not MODEL_NAME.search(root)
                or terminal in self.catalog.holder_terminals):
            return False
        return self.project.defines_function(terminal, self.path) is False

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
        if not _names_parameters(first.value):
            return None
        if not self._used_as_optimizer(call, only_optimizers=True, handed_parameters=True):
            return None
        return self._holder(call, cat.FACTORY, f"{_callee_label(call.func)}()", args)

    def _used_as_optimizer(self, call: cst.Call, only_optimizers: bool = False, handed_parameters: bool = False) -> bool:
        """Types from use: a call known by its name alone, handed no parameters, builds an optimizer
        only when what it returns is used as one in this file (stepped, scheduled, handed on as
        `optimizer=`; analysis/uses.py), or is returned for the callers to use, or is kept in an
        attribute named for optimizers (`self.optimizers, ... = self.init_optimizers(model)`): an
        attribute's uses may lie in other files, a local name's all lie here. `only_optimizers` asks
        for uses that only an optimizer has, or a hand-over as `optimizer=` (a `step()` alone is a
        scheduler's or a clipper's too), and never counts a return. A call `handed_parameters` whose
        result is kept in an attribute under an optimizer's short name (`self.actor_opt = actor_opt_fn(
        self.actor_params)`: `opt` alone also names options) is one by the two together."""
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
            if handed_parameters and "." in key and cat.abbreviates_optimizer(use_key(key)):
                return True  # an attribute's uses may lie in other files (a local's are all read above)
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
            if text is not None and (cat.config_entry_names_optimizer(text) or text in self._optimizer_configs):
                return True
            if from_config and isinstance(arg.value, cst.SimpleString) and cat.names_optimizer(arg.value.value.strip("'\"")):
                return True
        return False

    def _module_parts(self, value: Value) -> Set[Handle]:
        """Types from use: an attribute of an object handed to an optimizer as its parameters (`[{'params':
        head.weight}]`, `[net.fc.bias]`) is a parameter of that object, a module: moving the module moves it,
        as a move after `head.parameters()` would. An attribute bound to an object of its own (a leaf
        tensor, a child module) is that object, and data or a tensor read off an object is no module part."""
        return {m for m in value.members | frozenset(value.handles)
                if m.sub and m.obj not in self._leaves and m.obj not in self._data and not self._is_holder_handle(m)
                and not cat.is_config_entry(m.text)}

    def _holder(self, call: cst.Call, kind: str, label: str, args, receiver: Value = EMPTY, copies: bool = False) -> Value:
        wrapped = args[0][1].holders if args and args[0][0].keyword is None and kind != cat.EMA else ()
        if wrapped:
            # `hvd.DistributedOptimizer(optimizer, ...)`: an optimizer built around another is that
            # optimizer, wrapped; it holds what it holds (one bug, one report, at the first build)
            return Value(holders=wrapped)
        placed_copy = copies and any(arg.keyword is not None and arg.keyword.value == cat.COPY_DEVICE_KEYWORD
                                     for arg, _ in args)
        models = set()
        passed = set()
        for index, (arg, value) in enumerate(args):
            models.update(value.params)
            models.update(m for m in value.members | frozenset(value.handles) if m.obj in self._leaves)  # `Adam([log_alpha])`
            if not arg.star and ((index == 0 and arg.keyword is None) or (
                    arg.keyword is not None and arg.keyword.value == cat.PARAMS_KEYWORD)):
                models.update(self._module_parts(value))  # not a `**` spread of settings (`**opt_args`)
            if kind not in (cat.FACTORY, cat.EMA) and not value.params and not arg.star and (
                    (index == 0 and arg.keyword is None) or (arg.keyword is not None and arg.keyword.value == cat.PARAMS_KEYWORD)):
                # `def make(params): return Adam(params)`: it holds what its callers hand in (`make(model.parameters())`)
                models.update(h for h in value.handles if h.obj in self.origins and self.origins[h.obj].kind == "param")
            if kind in (cat.FACTORY, cat.EMA) and arg.keyword is None and value.handle is not None and not value.holders:
                text = value.handle.text
                if text.count(".") == 0 or (text.startswith("self.") and text.count(".") == 1):
                    # a name holding parameters (`trainable = filter(...)`) gave them above
                    if not value.params and not self._holds_data(text) and not cat.names_optimizer(text):  # `cfg.optimizer`, `args.lr`, `[1e-3, 1e-4]` are settings
                        passed.update(value.handles)
        modelish = {h for h in passed if MODEL_NAME.search(h.text)}
        models.update(modelish or passed)
        if receiver.handle is not None and not receiver.holders and kind == cat.FACTORY:
            # `model.configure_optimizers(...)`: the receiver is the model. Another receiver (a trainer's
            # `self`, `self.trainer`) is only the model when nothing else was passed.
            if not models or MODEL_NAME.search(receiver.handle.text.rsplit(".", 1)[-1]):
                models.update(receiver.handles)
        models = {m for m in models if not self._is_holder_handle(m)}
        if not models:
            # `instantiate(cfg.optimizer)` with Hydra's `_partial_`: what it returns builds the optimizer
            return Value(makes=kind if kind == cat.FACTORY or not call.args else None)
        event = HolderEvent(
            self._site(call), kind, label, frozenset(models), bucket_view=keyword_is_true(call, "parameters_as_bucket_view"),
            copies=copies,
            placed_copy=placed_copy,
        )
        self._emit(event)
        return Value(holders=(event,))


def has_string_default(param: cst.Param) -> bool:
    """`optimizer="adam"`: a string default declares a name, not the object it names."""
    return isinstance(param.default, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


class BodyNames(NamedTuple):
    """What a function's body does with plain names, read in one visit (`body_names`)."""

    called: FrozenSet[str]  # names it calls (`optimizer(params)`: parameters used as factories)
    # names it keeps in attributes (`self.optimizer = optimizer`, `self.a, self.b = a, b`: their uses may lie in
    # other files, in the methods of a subclass or in the training loop that reads the attribute)
    kept: FrozenSet[str]
    # the attributes each name is kept in, through a placement too (`self.dualrnn = Dual_RNN.to(device)`:
    # a placement hands back the module it places)
    kept_as: Dict[str, FrozenSet[str]]


def body_names(function: cst.FunctionDef) -> BodyNames:
    called, kept, kept_as = set(), set(), {}

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
            value = node.value
            if (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                    and value.func.attr.value in cat.METHOD_PLACEMENTS):
                value = value.func.value
            if isinstance(value, cst.Name):
                attributes = {t.target.attr.value for t in node.targets if isinstance(t.target, cst.Attribute)}
                kept_as.setdefault(value.value, set()).update(attributes)

    function.body.visit(_Names())
    return BodyNames(frozenset(called), frozenset(kept), {name: frozenset(a) for name, a in kept_as.items()})


def _names_parameters(node: cst.BaseExpression) -> bool:
    """`x.parameters()`, a name for parameters (`params`), or their concatenation (`self.actor_params +
    self.phi_params`): what a call handed first must look like for its result to be an optimizer by use
    (`catalog.hands_parameters`; the prefilter asks the same of the syntax)."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _names_parameters(node.left) and _names_parameters(node.right)
    method = node.func.attr.value if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) else None
    return cat.hands_parameters(method, None if method else dotted_name(node))


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


def pairs_with_a_module(param_names) -> bool:
    """Whether a function's parameters let its side pair an optimizer handed in with a module it takes:
    one named as a model (`model`, `net`), or one an optimizer's qualifier names (`q_func1_optimizer`
    beside `q_func1`). Without one, only its callers know what the optimizer holds."""
    if any(cat.receives_model(name) for name in param_names):
        return True
    others = {name.lower() for name in param_names if not cat.receives_optimizer(name)}
    return any(_qualifier(name) in others or any(_pairs(_qualifier(name), _qualifier(other)) for other in others)
               for name in param_names if cat.receives_optimizer(name))


def _pairs(qualifier: str, other: str) -> bool:
    """Whether an optimizer's qualifier names a parameter by its qualifier: all of it, or its first word
    (`optimizer_center` and `center_criterion`, the center loss's own parameters)."""
    return bool(qualifier) and (other == qualifier or other.split("_", 1)[0] == qualifier)


def _named_by(qualifier: str, by_name: Dict[str, Handle]) -> Optional[Handle]:
    """The one parameter an optimizer's qualifier names (see _pairs), if exactly one."""
    if qualifier in by_name:
        return by_name[qualifier]
    named = [handle for name, handle in by_name.items() if _pairs(qualifier, _qualifier(name))]
    return named[0] if len(named) == 1 else None


def _qualifier(name: str) -> str:
    """What a parameter's name adds to its role: `sharded` in `sharded_optimizer`, `g` in `netG`."""
    return _ROLE_WORDS.sub("", name, count=1).strip("_").lower()


def _callee_label(func: cst.BaseExpression) -> str:
    """A looked-up callee as the code spells it, its key elided: `optims.__dict__[...]`."""
    if isinstance(func, cst.Subscript):
        return f"{_callee_label(func.value)}[...]"
    if isinstance(func, cst.Call):
        return f"{_callee_label(func.func)}(...)"
    return dotted_name(func) or "call"


