"""Splits a file into scopes, analyses each in an order that lets callers see their helpers' summaries."""
from __future__ import annotations

import ast
import dataclasses

import os
from functools import lru_cache
from dataclasses import dataclass, field
from itertools import count
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from .. import catalog as cat
from .blocks import suite_body, suites
from .events import Handle, HolderEvent, PlacementEvent, ScopeEvents, Site, StateMovedEvent
from .names import ImportTable, dotted_name
from .uses import OptimizerUses, optimizer_uses as find_optimizer_uses
from .bindings import callables_in
from .heap import GLOBAL, MODULE_SCOPE, STAR, Origin, handle_key
from .summary import (BuiltHolder, CallFact, HandedMaker, calls_of, Constructed, HelperSummary, KeptHolder, Part, ReturnedField, ReturnedInstance,
                      SummaryPlacement, UNPICKLED_HANDED)
from .walker import ScopeWalker
from ..syntax import python_tree, walk
from .heap import ModuleTables
from .aliases import Alias, alias_in


@dataclass
class ModuleAnalysis:
    """Every scope of one file with its ordered events."""

    scopes: List[ScopeEvents] = field(default_factory=list)
    # Calls of this file's and the project's functions and classes: (callee key, the signatures of
    # the callee's placements already made before the call) (see ScopeWalker.calls).
    calls: List[CallFact] = field(default_factory=list)
    # (class, method, method called after it on one object), from every scope of the file.
    method_orders: set = field(default_factory=set)


def analyze_module(module: cst.Module, catalog: cat.Catalog, overwrite_flag: bool = False, project=None,
                   path: str = "", source: Optional[str] = None) -> ModuleAnalysis:
    """`project` (a `ProjectIndex`) lets calls of other modules' functions and classes use their
    summaries; `path` is this file's, for resolving its relative imports; `source` is the text the
    module was parsed from (read for what the file uses as optimizers; generated when not given)."""
    imports = module_imports(module)
    analysis = ModuleAnalysis()
    where, ids = os.path.abspath(path) if path else "", count()
    classes = {d.name.value: d for d in _definitions(module.body) if isinstance(d, cst.ClassDef)}
    # A caller often comes before its helpers (`main()` at the top of the file): a helper not yet
    # walked when a call asks for it is summarised then, by a walk of its own.
    functions = {d.name.value: d for d in _definitions(module.body) if isinstance(d, cst.FunctionDef)}
    optimizer_uses = _lazy_optimizer_uses(module, source)
    tables, type_alias = module_tables(module.body, classes, functions, imports, catalog), _alias_lookup(module, source, imports, project, path)

    rewalk: Dict[str, object] = {}

    def new_walker(name: str, method_helpers: Dict[str, HelperSummary]) -> ScopeWalker:
        walker = ScopeWalker(name, imports.copy(), catalog, helpers, method_helpers, ids, overwrite_flag, constructors,
                             project, path)
        walker.calls = analysis.calls
        if rewalk:  # a definition walked again with what its callers hand (see _walk_again)
            walker.makers, walker.unpickled_params, walker.calls = rewalk["makers"], rewalk["unpickled"], []
        walker.method_orders, walker.optimizer_uses = analysis.method_orders, optimizer_uses
        walker.module_tables, walker.type_alias = tables, type_alias
        scope = walker.scope
        scope.starts_float32, scope.rank_devices, scope.module = _starts_float32(source), _rank_devices(source), module
        return walker

    # A constructor's summary runs its bases' `__init__`; one bug, one report (see `_handed_optimizers`).
    constructors = _LazyConstructors(classes, new_walker, _base_lookups(classes, imports, new_walker, project, path,
                                                                         catalog))
    helpers = _LazyFunctions(functions, new_walker)

    def analyze_function(function: cst.FunctionDef, prefix: str, register: bool) -> None:
        name = function.name.value
        summarize = register and functions.get(name) is function and helpers.start(name)
        walker = new_walker(f"{prefix}{name}()", {})
        names = walker.bind_parameters(function, is_method=False,
                                       arrival=(f"{prefix}{name}()", (where, f"{prefix}{name}")))
        walker.walk_body(suite_body(function.body), root=(function,))
        analysis.scopes.append(walker.scope)
        if summarize:
            helpers.finish(name, _summarize(name, walker, names))
        for nested in _definitions(suite_body(function.body)):
            analyze_definition(nested, f"{prefix}{function.name.value}.", register=False)

    def analyze_class(klass: cst.ClassDef, prefix: str) -> None:
        methods = _methods_of(klass)
        own = {m.name.value: m for m in methods}
        inherited = _inherited_methods(klass, classes)
        walker = new_walker(f"{prefix}{klass.name.value}", _LazySummaries(
            {**inherited, **own}, new_walker, _bases(klass, classes, imports, new_walker, project, path, catalog)))
        walker.scope.runs_first = _lifecycle(klass, imports)
        walker.scope.class_name = f"{prefix}{klass.name.value}"
        methods = _walk_class(walker, methods, own, inherited, _base_constructor_calls(klass, classes),
                              f"{prefix}{klass.name.value}", where)
        _inherited_placements(walker, klass, {method.name.value for method in methods})
        analysis.scopes.append(walker.scope)
        for definition in _definitions(suite_body(klass.body)):
            if isinstance(definition, cst.ClassDef):
                analyze_class(definition, f"{prefix}{klass.name.value}.")
            for nested in _definitions(suite_body(definition.body)) if isinstance(definition, cst.FunctionDef) else ():
                analyze_definition(nested, f"{prefix}{klass.name.value}.{definition.name.value}.", register=False)

    def analyze_definition(definition: cst.CSTNode, prefix: str, register: bool) -> None:
        if isinstance(definition, cst.FunctionDef):
            analyze_function(definition, prefix, register)
        elif isinstance(definition, cst.ClassDef):
            analyze_class(definition, prefix)

    for definition in _definitions(module.body):
        analyze_definition(definition, "", register=True)
    _walk_again(_definitions(module.body), where, analysis, project, rewalk, analyze_definition,
                lambda: module.code if source is None else source)
    walker = new_walker(MODULE_SCOPE, {})
    walker.walk_body(module.body)
    analysis.scopes.append(walker.scope)
    _note_method_orders(analysis)
    return analysis


@lru_cache(maxsize=64)
def _rank_devices(source: Optional[str]) -> FrozenSet[str]:
    """The device indices the file hands a wrapper (`device_ids=[opt.local_rank]`), when it never chooses
    the current device: then `.cuda()` is cuda:0 in every process and a move to one of these is a move
    to another device in every process but the first (see catalog.CURRENT_DEVICE_CALLS)."""
    if source is None or cat.DEVICE_INDEX_KEYWORD not in source:
        return frozenset()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    indices = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in cat.CURRENT_DEVICE_VARIABLES:
            return frozenset()
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(cat.CURRENT_DEVICE_CALLS):
            return frozenset()
        for keyword in node.keywords if isinstance(node, ast.Call) else ():
            if keyword.arg == cat.DEVICE_INDEX_KEYWORD and isinstance(keyword.value, (ast.List, ast.Tuple)):
                indices.update("".join(ast.unparse(element).split()) for element in keyword.value.elts)
    return frozenset(indices)


@lru_cache(maxsize=64)
def _starts_float32(source: Optional[str]) -> bool:
    """Whether the modules this file builds start in float32: the default dtype, unless the file
    changes it (`torch.set_default_dtype(torch.float64)`) or its text is not known."""
    return source is not None and not any(switch in source for switch in cat.DEFAULT_DTYPE_SWITCHES)


def _walk_again(definitions: Sequence[cst.CSTNode], where: str, analysis: ModuleAnalysis, project,
                rewalk: Dict[str, object], analyze_definition, source: Callable[[], str]) -> None:
    """The definitions whose callers hand them what their first walk could not know, walked again."""
    _walk_again_with_makers(definitions, where, analysis, project, rewalk, analyze_definition, source)
    _walk_again_with_unpickled(definitions, where, analysis, rewalk, analyze_definition)


def _walk_again_with_makers(definitions: Sequence[cst.CSTNode], where: str, analysis: ModuleAnalysis, project,
                            rewalk: Dict[str, object], analyze_definition, source: Callable[[], str]) -> None:
    """A function or class whose callers (in the file or the project) hand the callables it calls
    (`Net(opt_fn=torch.optim.Adam)`) builds what they build: it is walked again with them."""
    if not project and not any(isinstance(fact.handed.get(name), HandedMaker) for fact in analysis.calls
                               for name in fact.handed):
        return  # no caller here hands a callable, and no other module is asked
    called = _called_parameters(source())
    for definition in definitions if called else ():
        name = definition.name.value
        makers = _handed_makers(called.get(name, frozenset()), (where, name), analysis.calls, project)
        if not makers:
            continue
        _replace_walk(definition, analysis, rewalk, analyze_definition, makers=((where, name), makers), unpickled={})


def _walk_again_with_unpickled(definitions: Sequence[cst.CSTNode], where: str, analysis: ModuleAnalysis,
                               rewalk: Dict[str, object], analyze_definition) -> None:
    """A class whose methods a call of this file hands what unpickling made
    (`agent.load_state_dict(torch.load(path))`) is walked again with those parameters unpickled: what
    the method takes out of them (`self.log_alpha = state_dict["log_alpha"]`) is a new object, and
    rebinding a held attribute to it leaves its optimizer stale. Callers in other modules are not asked."""
    handed: Dict[Tuple[str, str], set] = {}
    for fact in analysis.calls:
        key = fact.callee
        if key[0] == where and "." in key[1]:
            for name, what in fact.handed.items():
                if what == UNPICKLED_HANDED:
                    handed.setdefault(key, set()).add(name)
    classes = {key[1].partition(".")[0] for key in handed}
    for definition in definitions:
        if not (isinstance(definition, cst.ClassDef) and definition.name.value in classes):
            continue
        _replace_walk(definition, analysis, rewalk, analyze_definition, makers=(("", ""), {}),
                      unpickled={key: frozenset(names) for key, names in handed.items()})


def _replace_walk(definition: cst.CSTNode, analysis: ModuleAnalysis, rewalk: Dict[str, object], analyze_definition,
                  **context) -> None:
    """Walk a definition again with what its callers hand (`context`, read by `new_walker`): that walk's
    scope takes the place of its first walk's (its nested definitions' stay as they were)."""
    index = len(analysis.scopes)
    rewalk.update(context)
    try:
        analyze_definition(definition, "", register=False)
    finally:
        rewalk.clear()
    again = analysis.scopes[index]
    del analysis.scopes[index:]
    analysis.scopes = [again if scope.name == again.name else scope for scope in analysis.scopes]


def _handed_makers(called: FrozenSet[str], key: Tuple[str, str], calls: List[CallFact], project) -> Dict[str, str]:
    """The parameters a function (or a class's constructor) calls that its callers hand a callable
    building a holder, with that holder's kind; asked only of definitions that call a parameter."""
    if not called:
        return {}
    facts = calls_of(key, calls, project)
    if facts is None:  # the project's callers unknown: this file's still hand what they hand
        facts = calls_of(key, calls, None)
    return {name: fact.handed[name].kind for fact in facts for name in sorted(called)
            if isinstance(fact.handed.get(name), HandedMaker)}


_DEFERRED = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef})


def _called_parameters(source: str) -> Dict[str, FrozenSet[str]]:
    """For each module-level function and class (its `__init__`), the parameters its body calls and
    never rebinds (`self.opt = opt_fn(self.params)`); read from Python's own tree, once per file."""
    try:
        tree = python_tree(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    table: Dict[str, FrozenSet[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            function = next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
        else:
            function = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        if function is None:
            continue
        arguments = function.args
        names = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
        # its own body: the functions, lambdas and classes it defines run later, as scopes of their own
        inner = [n for child in ast.iter_child_nodes(function) for n in walk(child, _DEFERRED)]
        called = {n.func.id for n in inner if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)} & names
        if called:
            table[node.name] = frozenset(called - {n.id for n in inner if isinstance(n, ast.Name)
                                                   and isinstance(n.ctx, ast.Store)})
    return table


def _walk_class(walker: ScopeWalker, methods: List[cst.FunctionDef], own: Dict[str, cst.FunctionDef],
                inherited: Dict[str, cst.FunctionDef], base_init_calls: FrozenSet[str], qualified: str,
                where: str) -> List[cst.FunctionDef]:
    """A class's scope: its methods, and the inherited ones its objects run differently or on what it
    keeps. Methods resolve by the receiver's class: a base's method that calls one this class overrides
    runs the override here (`Base.fit()` calling `self.prepare()`). Returns every method walked."""
    walker.binds_base_kept = True
    dispatching = (qualified.rpartition(".")[2], frozenset(own))
    dispatched = _dispatched(inherited, own)
    walker.scope.dispatched = frozenset(id(m) for m in dispatched)
    methods = methods + dispatched
    _walk_methods(walker, methods, qualified, where, dispatching)
    # what the constructors of its bases call through `self` runs inside its own (`super().__init__()`)
    walker.scope.init_calls |= base_init_calls
    # A class that builds or keeps an optimizer runs its inherited methods on the model it keeps:
    # `runner.initialize_distributed_model()`, defined by the base, wraps what this class was handed.
    # (not those a constructor calls: they run inside it, where the constructor's walk replays them)
    in_init = walker.scope.init_calls
    rest = [m for name, m in inherited.items()
            if name not in own and name != "__init__" and name not in in_init and id(m) not in walker.scope.dispatched]
    if rest and walker.scope.of_type(HolderEvent):
        walker.scope.dispatched |= frozenset(id(m) for m in rest)
        _walk_methods(walker, rest, qualified, where, dispatching)
        methods = methods + rest
    return methods


def _walk_methods(walker: ScopeWalker, methods: List[cst.FunctionDef], qualified: str, where: str,
                  dispatching: Tuple[str, FrozenSet[str]]) -> None:
    """A class's methods in one scope, `__init__` first, then in source order; the dispatched ones (see
    `_dispatched`) with the class's overrides named in messages."""
    for method in sorted(methods, key=lambda m: m.name.value != "__init__"):
        walker.forget_locals()
        # a constructor's callers call the class; the other methods' callers are not followed
        label, target = ((f"{qualified}()", qualified) if method.name.value == "__init__"
                         else (f"{qualified}.{method.name.value}()", f"{qualified}.{method.name.value}"))
        walker.bind_parameters(method, is_method=True, arrival=(label, (where, target)))
        walker.dispatching = dispatching if id(method) in walker.scope.dispatched else None
        walker.walk_body(suite_body(method.body), root=(method,))
        walker.dispatching = None
        if method.name.value == "__init__":
            walker.scope.init_calls = frozenset(walker.self_calls)
            walker.scope.kept_parts = _kept_objects(walker)
            walker.note_kept_objects((where, qualified), walker.scope.kept_parts)


def _base_classes(klass: cst.ClassDef, classes: Dict[str, cst.ClassDef]) -> List[cst.ClassDef]:
    """A class's bases of this file, and theirs, nearest first."""
    found: List[cst.ClassDef] = []

    def visit(current: cst.ClassDef) -> None:
        for name in _base_names(current):
            base = classes.get(name)
            if base is not None and base is not klass and all(base is not f for f in found):
                found.append(base)
                visit(base)

    visit(klass)
    return found


def _base_names(klass: cst.ClassDef) -> List[str]:
    """The dotted names of a class's bases; a generic base (`BaseSGDTemplate[TExperience, TInput]`) is
    its class, a keyword (`metaclass=ABCMeta`) none."""
    return [dotted for dotted in (_dotted(arg.value.value if isinstance(arg.value, cst.Subscript) else arg.value)
                                  for arg in klass.bases if arg.keyword is None) if dotted]


def _methods_of(klass: cst.ClassDef) -> List[cst.FunctionDef]:
    return [d for d in _definitions(suite_body(klass.body)) if isinstance(d, cst.FunctionDef)]


def _inherited_methods(klass: cst.ClassDef, classes: Dict[str, cst.ClassDef]) -> Dict[str, cst.FunctionDef]:
    """The methods a class inherits from its bases in this file, nearest first (its own excluded)."""
    found: Dict[str, cst.FunctionDef] = {}
    for base in _base_classes(klass, classes):
        for method in _methods_of(base):
            found.setdefault(method.name.value, method)
    return found


def _base_constructor_calls(klass: cst.ClassDef, classes: Dict[str, cst.ClassDef]) -> FrozenSet[str]:
    """The methods the constructors of a class's bases in this file call through `self`."""
    return frozenset().union(*(_self_calls(m) for base in _base_classes(klass, classes)
                               for m in _methods_of(base) if m.name.value == "__init__"))


def _dispatched(inherited: Dict[str, cst.FunctionDef], own: Dict[str, cst.FunctionDef]) -> List[cst.FunctionDef]:
    """The inherited methods (not overridden) whose body calls `self.<m>()` for a method `m` this class
    overrides: on this class's objects they run its override, which their base's walk never saw."""
    overridden = set(own) & set(inherited)
    if not overridden:
        return []
    return [method for name, method in inherited.items()
            if name not in own and overridden & _self_calls(method)]


class _SelfCalls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: Set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            self.names.add(func.attr.value)


def _self_calls(function: cst.FunctionDef) -> Set[str]:
    """The methods a function calls through `self` (`self.prepare()`), read from its text."""
    visitor = _SelfCalls()
    function.body.visit(visitor)
    return visitor.names


def _inherited_placements(walker: ScopeWalker, klass: cst.ClassDef, defined: Set[str]) -> None:
    """The placement methods a class inherits (`to()`, `cuda()` of a base that moves `self.model`) run
    after its constructor, as its own would: asked only of a constructor that builds a holder."""
    if "__init__" in defined and walker.scope.of_type(HolderEvent):
        for name in sorted(set(cat.METHOD_PLACEMENTS) - defined):
            walker.replay_inherited(klass, name)


def _lifecycle(klass: cst.ClassDef, imports: ImportTable):
    """The framework lifecycle of a class by its bases (catalog.LIFECYCLES)."""
    bases = (imports.qualify(name) for name in (_dotted(arg.value) for arg in klass.bases if arg.keyword is None) if name)
    return cat.lifecycle(bases, klass.name.value)


def _note_method_orders(analysis: ModuleAnalysis) -> None:
    """The order a class's callers call its methods in, for the stories across its methods."""
    for scope in analysis.scopes:
        scope.ordered = frozenset((a, b) for c, a, b in analysis.method_orders if c == scope.name)


def _lazy_optimizer_uses(module: cst.Module, source: Optional[str]) -> Callable[[], OptimizerUses]:
    """What the file uses as optimizers (analysis/uses.py), read on first need, once per file."""
    uses: List[OptimizerUses] = []

    def optimizer_uses() -> OptimizerUses:
        if not uses:
            uses.append(find_optimizer_uses(module.code if source is None else source))
        return uses[0]

    return optimizer_uses


def _alias_lookup(module: cst.Module, source: Optional[str], imports: ImportTable, project, path: str):
    """A generic alias by the name an annotation uses: this module's own, else one an import brings
    from the project (analysis/aliases.py); each name looked up once."""
    found: Dict[str, Optional[Alias]] = {}

    def lookup(name: str) -> Optional[Alias]:
        if name not in found:
            alias = alias_in(source if source is not None else module.code, name) if "." not in name else None
            imported = imports.imported_name(name) if alias is None and project is not None else None
            found[name] = project.type_alias(imported, path) if imported else alias
        return found[name]

    return lookup


def module_tables(body: Sequence[cst.CSTNode], classes, functions, imports: Optional[ImportTable] = None,
                  catalog: cat.Catalog = cat.DEFAULT_CATALOG) -> ModuleTables:
    """Module-level names bound to this file's classes or functions, alone or in a registry dict
    (`PLACERS = {"gpu": GpuPlacer, "cpu": CpuPlacer}`), as (key or None, name) pairs."""
    tables = ModuleTables()

    def defined(name: str) -> FrozenSet[Tuple[Optional[str], str]]:
        return frozenset({(None, name)}) if name in classes or name in functions else frozenset()

    for statement in _top_level_simple_statements(body):
        if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0].target, cst.Name)):
            continue
        pairs = callables_in(statement.value, defined)
        if pairs:
            tables[statement.targets[0].target.value] = pairs
        maker = _maker_in(statement.value, imports, catalog) if imports is not None else None
        if maker is not None:
            tables.makers[statement.targets[0].target.value] = maker
    return tables


def _maker_in(value: cst.BaseExpression, imports: ImportTable, catalog: cat.Catalog) -> Optional[str]:
    """The holder kind an optimizer class named in `value` builds (alone, or in a dict, list or tuple)."""
    if isinstance(value, (cst.Dict, cst.List, cst.Tuple)):
        parts = [element.value for element in value.elements if isinstance(element, (cst.DictElement, cst.Element))]
    else:
        parts = [value]
    names = (_dotted(part) for part in parts)
    return next((catalog.holders[imports.qualify(n)] for n in names if n and imports.qualify(n) in catalog.holders), None)


def module_imports(module: cst.Module) -> ImportTable:
    imports = ImportTable()
    for statement in _top_level_simple_statements(module.body):
        imports.add(statement)
    return imports


class ModuleSummaries:
    """What another module's top-level functions and classes do to their arguments, computed the
    first time a caller in the project asks (most of a module is never called from elsewhere)."""

    def __init__(self, module: cst.Module, catalog: cat.Catalog, project, path: str,
                 source: Optional[str] = None) -> None:
        imports = module_imports(module)
        ids = count()
        definitions = list(_definitions(module.body))
        functions = {d.name.value: d for d in definitions if isinstance(d, cst.FunctionDef)}
        classes = {d.name.value: d for d in definitions if isinstance(d, cst.ClassDef)}
        optimizer_uses = _lazy_optimizer_uses(module, source)
        tables = module_tables(module.body, classes, functions, imports, catalog)

        def new_walker(name: str, method_helpers) -> ScopeWalker:
            walker = ScopeWalker(name, imports.copy(), catalog, self.functions, method_helpers, ids, False,
                                 self.constructors, project, path)
            walker.optimizer_uses = optimizer_uses
            walker.module_tables = tables
            return walker

        self.functions = _LazyFunctions(functions, new_walker)
        self.constructors = _LazyConstructors(classes, new_walker, _base_lookups(classes, imports, new_walker, project,
                                                                                  path, catalog))
        self._imports, self._project, self._path = imports, project, path
        self._catalog = catalog
        self._classes = classes
        self._new_walker = new_walker
        self._methods: Dict[str, "_LazySummaries"] = {}

    def method(self, class_name: str, name: str) -> Optional[HelperSummary]:
        """`Trainer.setup` as a subclass in another module calls it (`self.setup()`, `super().setup()`)."""
        klass = self._classes.get(class_name)
        if klass is None:
            imported = self._imports.imported_name(class_name) if self._project is not None else None
            return self._project.lookup(f"{imported}.{name}", self._path) if imported else None
        if class_name not in self._methods:
            methods = {m.name.value: m for m in _methods_of(klass)}
            self._methods[class_name] = _LazySummaries(
                methods, self._new_walker, _bases(klass, self._classes, self._imports, self._new_walker, self._project, self._path,
                                               self._catalog))
        return self._methods[class_name].get(name)

    def get(self, name: str) -> Optional[HelperSummary]:
        """`train` (a function) or `Trainer` (a class: its constructor); a name the module imports
        from elsewhere in the project is followed there (`pkg/__init__.py` re-exporting `.parallel`)."""
        if not name:
            return None
        if "." in name:
            class_name, _, method = name.partition(".")
            return self.method(class_name, method) if "." not in method else None
        summary = self.functions.get(name) or self.constructors.get(name)
        if summary is None and self._project is not None:
            imported = self._imports.imported_name(name)
            if imported is not None:
                summary = self._project.lookup(imported, self._path)
        return summary


class _Lazy:
    """Summaries computed the first time a call asks for one, each at most once; a recursive call
    sees no summary rather than looping."""

    def __init__(self, new_walker) -> None:
        self._new_walker = new_walker
        self._done: Dict[str, Optional[HelperSummary]] = {}
        self._contexts: Dict[Tuple[str, Tuple[Tuple[str, bool], ...]], Optional[HelperSummary]] = {}
        self._in_context_walk: set = set()

    def get(self, name: str) -> Optional[HelperSummary]:
        if name in self._in_context_walk:
            return None  # a recursion inside a context's walk, as inside the plain walk
        if name not in self._done:
            self._done[name] = None
            self._done[name] = self._contextual(name, self._compute(name))
        return self._done[name]

    def in_context(self, name: str, truths: Dict[str, bool]) -> Optional[HelperSummary]:
        """The summary of a walk in which the call's constant arguments decide the branches that test
        them (`apply(model, mix)` leaves `device=None`: `if device is None:` takes its first arm), so
        what the names hold after the branch is what that arm made. Each context once; a recursive
        call sees no summary, as in the plain walk: the summary without context would bring back the
        moves to a place the context had decided (demucs' `apply_model(model, shifted, **kwargs)`)."""
        key = (name, tuple(sorted(truths.items())))
        if key not in self._contexts:
            self._contexts[key] = None
            self._in_context_walk.add(name)
            try:
                self._contexts[key] = self._compute(name, dict(truths))
            finally:
                self._in_context_walk.discard(name)
        return self._contexts[key]

    def _contextual(self, name: str, summary: Optional[HelperSummary]) -> Optional[HelperSummary]:
        if summary is not None and summary.tests and summary.in_context is None:
            return dataclasses.replace(summary, in_context=lambda truths: self.in_context(name, truths))
        return summary

    def start(self, name: str) -> bool:
        """The caller walks this definition itself and will `finish` it: whether nobody asked before
        (a call inside the walk, a recursion, then sees no summary)."""
        if name in self._done:
            return False
        self._done[name] = None
        return True

    def finish(self, name: str, summary: Optional[HelperSummary]) -> None:
        self._done[name] = self._contextual(name, summary)

    def _compute(self, name: str, context: Optional[Dict[str, bool]] = None) -> Optional[HelperSummary]:
        raise NotImplementedError

    def _summary_walker(self, label: str, method_helpers, context: Optional[Dict[str, bool]] = None) -> ScopeWalker:
        walker = self._new_walker(label, method_helpers)
        walker.calls = []  # a summary's walk repeats the scope's own: its calls are counted there
        walker.context = context or {}
        return walker

    def _walk(self, label: str, method: cst.FunctionDef, method_helpers,
              context: Optional[Dict[str, bool]] = None) -> Tuple[ScopeWalker, Tuple[str, ...]]:
        walker = self._summary_walker(label, method_helpers, context)
        names = walker.bind_parameters(method, is_method=True)
        walker.walk_body(suite_body(method.body), root=(method,))
        return walker, names


class _LazyFunctions(_Lazy):
    """Module-level function summaries for callers in other modules."""

    def __init__(self, functions: Dict[str, cst.FunctionDef], new_walker) -> None:
        super().__init__(new_walker)
        self._functions = functions
        self._nested: Dict[str, cst.FunctionDef] = {}

    def defines(self, name: str) -> bool:
        return name in self._functions

    def nested(self, function: cst.FunctionDef) -> Optional[HelperSummary]:
        """A function defined inside another (`def make(params): return Adam(params)` in `main()`),
        summarised as a module-level one is: what it reads of the enclosing function is unknown there."""
        key = f"{function.name.value} in line {id(function)}"
        self._nested[key] = function
        return self.get(key)

    def _compute(self, name: str, context: Optional[Dict[str, bool]] = None) -> Optional[HelperSummary]:
        function = self._functions.get(name) or self._nested.get(name)
        if function is None:
            return None
        walker = self._summary_walker(f"{function.name.value}()", {}, context)
        names = walker.bind_parameters(function, is_method=False)
        walker.walk_body(suite_body(function.body), root=(function,))
        return _summarize(function.name.value, walker, names)


class _LazySummaries(_Lazy):
    """Method summaries for `self.method()` calls. Most methods are never called through `self` in
    their own class; walking each one twice would cost as much as the rest of the analysis. A method
    the class does not define comes from its bases (`inherited`), in this file or the project."""

    def __init__(self, methods: Dict[str, cst.FunctionDef], new_walker, inherited=None) -> None:
        super().__init__(new_walker)
        self._methods = methods
        self._inherited = inherited

    def _compute(self, name: str, context: Optional[Dict[str, bool]] = None) -> Optional[HelperSummary]:
        method = self._methods.get(name)
        if method is None:
            return self.inherited(name) if context is None else None
        walker, names = self._walk(name, method, self, context)
        summary = _summarize(name, walker, names)
        summary.reads_as_attribute = _is_property(method)
        return summary

    def defines(self, name: str) -> bool:
        """Whether the class itself defines this method (its own `to()` or `cuda()` is not torch's)."""
        return name in self._methods

    def returns_nothing(self, name: str) -> bool:
        """Whether the class defines the method with a body of its own (not an abstract stub: a
        docstring, `pass`, `...`, `raise NotImplementedError`) that returns no value: what its callers
        get is None, whatever its name says."""
        method = self._methods.get(name)
        if method is None or _is_stub(method):
            return False
        summary = self.get(name)
        return summary is not None and not summary.returns_value

    def property_read(self, name: str) -> Tuple[str, ...]:
        """What reading `self.<name>` reads when the class (or a base of this file) defines it as a
        property returning attributes of the object: `self.model` for `@property def inner_model(self):
        return self.model.module if isinstance(self.model, DataParallel) else self.model`; each of them
        for `@property def networks(self): return [self.policy, self.qf]` (a loop over it gets each)."""
        method = self._methods.get(name)
        if method is None or not _is_property(method):
            return ()
        summary = self.get(name)
        if summary is None:
            return ()
        return tuple(".".join((part.origin.key,) + part.sub) for part in summary.attributes_read()
                     if part.origin.key != f"self.{name}")

    def inherited(self, name: str) -> Optional[HelperSummary]:
        """The method as the bases define it: what `super().name()` runs."""
        return self._inherited(name) if self._inherited is not None else None

    def of_base(self, base: str, name: str) -> Optional[HelperSummary]:
        """The method as the base `base` (a name the class's header gives) has it."""
        return self._inherited.named(base, name) if self._inherited is not None else None


def _decorated(method: cst.FunctionDef, names: FrozenSet[str]) -> bool:
    """Whether a decorator's last name is one of `names` (`@abc.abstractmethod`, `@property`)."""
    return any((_dotted(d.decorator) or "").rpartition(".")[2] in names for d in method.decorators)


def _is_stub(method: cst.FunctionDef) -> bool:
    """An abstract method, or a body of a docstring, `pass`, `...` and `raise` only: it says nothing."""
    if _decorated(method, frozenset({"abstractmethod"})):
        return True
    for statement in suite_body(method.body):
        small = statement.body if isinstance(statement, cst.SimpleStatementLine) else None
        if small is None or not all(isinstance(s, (cst.Pass, cst.Raise)) or (
                isinstance(s, cst.Expr) and isinstance(s.value, (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)))
                for s in small):
            return False
    return True


def _is_property(method: cst.FunctionDef) -> bool:
    """`@property`, `@functools.cached_property`: read as an attribute, run as a call."""
    return _decorated(method, frozenset({"property", "cached_property"}))


def _bases(klass: cst.ClassDef, classes: Dict[str, cst.ClassDef], imports: ImportTable, new_walker, project, path,
           catalog: cat.Catalog):
    """Looks a method up in a class's bases, in order: a class of this file, or one an import brings
    in from the project (`from .base import BaseStrategy`)."""
    names = _base_names(klass)
    if not names:
        return None
    local: Dict[str, _LazySummaries] = {}
    keyed: Dict[Tuple[str, str], tuple] = {}  # (base, name) -> (its summary, that summary as `super()` names it)

    def one(base: str, name: str) -> Tuple[Optional[HelperSummary], Optional[bool]]:
        """The method as one base has it, and whether that base defines it itself (None: unknown)."""
        if base in classes and classes[base] is not klass:
            if base not in local:
                methods = {m.name.value: m for m in _methods_of(classes[base])}
                local[base] = _LazySummaries(methods, new_walker,
                                             _bases(classes[base], classes, imports, new_walker, project, path, catalog))
            summary = local[base].get(name)
            if summary is not None and summary.key is None:
                # what `super().name()` calls, as its callee side names itself (a constructor by its
                # class): a copy, once; the class's own summary stays as its walk made it
                if (base, name) not in keyed or keyed[(base, name)][0] is not summary:
                    keyed[(base, name)] = (summary, dataclasses.replace(summary, key=(
                        os.path.abspath(path) if path else "", base if name == "__init__" else f"{base}.{name}")))
                summary = keyed[(base, name)][1]
            return summary, local[base].defines(name)
        # a base an import names, or, when none does, one a star import may bring (`from .utils import *`)
        fulls = ((imports.imported_name(base),) if imports.imported_name(base)
                 else imports.starred(base) if base not in classes else ())
        for full in fulls if project is not None else ():
            summary = project.lookup(f"{full}.{name}", path)
            if summary is not None:
                return summary, project.defines(full, name, path)
        summary = _base_method(catalog.base_method(imports.qualify(base), name), name)
        return summary, (True if summary is not None else None)

    def inherited(name: str) -> Optional[HelperSummary]:
        # Python's order, near enough: a base that defines the method itself comes before one that only
        # inherits it; and with cooperative constructors (`super().__init__(**kwargs)` in each mixin)
        # every base's `__init__` runs, so the one that keeps or does something is the one that counts
        found = [(summary, own) for summary, own in (one(base, name) for base in names) if summary is not None]
        if name == "__init__":
            acting = [pair for pair in found if _acts(pair[0])]
            found = acting + [pair for pair in found if not _acts(pair[0])]
        return next((summary for summary, own in found if own is not False), found[0][0] if found else None)

    # `Base.__init__(self, config)`: the method as the base the call names has it
    inherited.named = lambda base, name: one(base, name)[0] if base in names else None
    return inherited


def _acts(summary: HelperSummary) -> bool:
    """Whether a constructor keeps or does anything its callers see."""
    return bool(summary.attributes or summary.parameter_attributes or summary.placements or summary.self_holders
                or summary.constructed or summary.holder is not None)


def _base_lookups(classes: Dict[str, cst.ClassDef], imports: ImportTable, new_walker, project, path,
                  catalog: cat.Catalog):
    """A class -> the lookup of the methods it inherits (`_bases`), for a module's constructors."""
    return lambda klass: _bases(klass, classes, imports, new_walker, project, path, catalog)


def _base_method(kind: Optional[str], name: str) -> Optional[HelperSummary]:
    """A summary, from the catalog, of a method that a base class outside the tree defines."""
    if kind is None:
        return None
    model = Origin("self", "self.model")
    summary = HelperSummary(name)
    if kind == cat.OPTIMIZER_SETUP:
        summary.self_holders.append(KeptHolder(cat.FACTORY, "the base class's optimizers", [Part(model, ())], False,
                                                "self.optimizers"))
        return summary
    placement = cat.base_method_placement(kind)
    event = PlacementEvent(Site(0, cst.Name(name), ()), Handle(-1, (), "self.model"), placement.kind, placement.label,
                           placement.sync_wrapper, placement.ddp, operation=name)
    summary.placements.append(SummaryPlacement(model, (), event))
    return summary


def _dotted(node: cst.CSTNode) -> Optional[str]:
    return dotted_name(node)


class _LazyConstructors(_Lazy):
    """What calling a class of this file builds: the holders its `__init__` makes, on the arguments or
    on the new object itself (an agent or policy that builds its own optimizer)."""

    def __init__(self, classes: Dict[str, cst.ClassDef], new_walker, bases=None) -> None:
        super().__init__(new_walker)
        self._classes = classes
        self._bases = bases  # a class -> the lookup of the methods it inherits (see `_bases`)

    def defines(self, name: str) -> bool:
        return name in self._classes

    def base_names(self, name: str) -> Tuple[str, ...]:
        """The bases a class of this file names, as written (`nn.DataParallel`)."""
        klass = self._classes.get(name)
        return tuple(filter(None, (dotted_name(base.value) for base in klass.bases))) if klass is not None else ()

    def _compute(self, name: str, context: Optional[Dict[str, bool]] = None) -> Optional[HelperSummary]:
        klass = self._classes.get(name)
        methods = {m.name.value: m for m in _methods_of(klass)} if klass else {}
        init = methods.get("__init__")
        if klass is None:
            return None
        lazy = _LazySummaries(methods, self._new_walker, self._bases(klass) if self._bases is not None else None)
        if init is None:
            # built by the `__init__` it inherits (`class Algorithm(BaseAlgorithm)` defining only `to`):
            # that constructor's summary, or, with none in the project (`nn.Module`'s), one that keeps
            # nothing; either way with this class's methods for what its objects do later
            # (`model = GANModel(); model.initialize(opt)`)
            inherited = lazy.inherited("__init__")
            if inherited is None:
                return HelperSummary(name, methods=lazy.get)
            return dataclasses.replace(inherited, name=name, methods=lazy.get)
        walker, names = self._walk(f"{name}.__init__", init, lazy, context)
        summary = _summarize(name, walker, names)
        summary.methods = lazy.get
        for key, binding in walker.env.items():
            origin = walker.origins.get(binding.handle.obj)
            if key.startswith("self.") and key.count(".") == 1 and binding.params and not binding.holders and (
                    origin is None or origin.kind != "param"):
                carried = [Part(walker.origins[h.obj], h.sub) for h in binding.params
                           if h.obj in walker.origins and walker.origins[h.obj].kind == "param"]
                if carried:
                    summary.parameter_attributes[key] = carried
        kept = _kept_objects(walker)
        for event in walker.scope.events:
            part = _part_of_new(name, event.handle, kept) if isinstance(event, PlacementEvent) else None
            if part is not None:
                # the object placed inside its own constructor, before or after its optimizer
                summary.constructed.append(Constructed(event, (), [part], False, ""))
        for holder in walker.scope.of_type(HolderEvent):
            models = []
            for handle in holder.models:
                origin = walker.origins.get(handle.obj)
                part = _part_of_new(name, handle, kept)
                if origin is not None and origin.kind == "param":
                    models.append(Part(origin, handle.sub))
                elif part is not None:
                    models.append(part)  # the new object itself, or a submodule of it
            if models:
                var = walker.scope.name_of(holder)
                attribute = var[5:] if var and var.startswith("self.") else ""
                if not attribute and holder.attribute and holder.models:
                    # built by the constructor of an object this one keeps (`self._wm = WorldModel(...)`)
                    inner = next(iter(holder.models))
                    attribute = ".".join(kept.get(inner.obj, ()) + (holder.attribute,)) if inner.obj in kept else ""
                summary.constructed.append(Constructed(holder, holder.label, models, holder.bucket_view, attribute))
        summary.constructed.sort(key=lambda entry: entry.event.site.order)
        return summary


def _kept_objects(walker: ScopeWalker) -> Dict[int, Tuple[str, ...]]:
    """The objects a constructor built and keeps under an attribute of its own (`self._wm =
    WorldModel(config)`), by id: each is that part of the new object, and what its own constructor
    built on it (an optimizer on its parameters) is built on that part."""
    kept: Dict[int, Tuple[str, ...]] = {}
    for key, binding in walker.env.items():
        handle = binding.handle
        origin = walker.origins.get(handle.obj) if handle is not None else None
        if (key.startswith("self.") and "." not in key[5:] and handle is not None and not handle.sub
                and (origin is None or origin.kind == "local")):  # not a caller's object (an argument)
            kept.setdefault(handle.obj, (key[5:],))
    return kept


def _part_of_new(name: str, handle, kept: Dict[int, Tuple[str, ...]]) -> Optional[Part]:
    """The part of the object a constructor makes that `handle` is, if any: `self`, `self.encoder`, or
    an object it built and keeps (`self._wm`, and parts of it)."""
    if handle.text == "self" or handle.text.startswith("self."):
        return Part(Origin("new", name), tuple(handle.text.split(".")[1:]))
    if handle.obj in kept:
        return Part(Origin("new", name), kept[handle.obj] + handle.sub)
    return None


def _summarize(name: str, walker: ScopeWalker, param_names: Tuple[str, ...]) -> HelperSummary:
    summary = HelperSummary(name, param_names=param_names, state_calls=list(walker.state_calls),
                            kept_states=list(walker.kept_states),
                            argument_state_calls=list(walker.argument_state_calls),
                            regroups=walker.regroups, syncs_self_optimizers=walker.syncs_self_optimizers,
                            handled=list(walker.handled), tests=frozenset(walker.tested) & frozenset(walker.arguments),
                            arguments=walker.arguments, kwargs_keys=walker.kwargs_keys,
                            decidable=walker.decidable, declared_modules=walker.declared_modules)
    globals_read = _globals_read(walker)
    for event in walker.scope.of_type(PlacementEvent):
        if event.rebinds_name:
            continue  # a local name now means a copy: the caller's object is as it was
        origin = walker.origins.get(event.handle.obj)
        if origin is not None and origin.kind in ("param", "self", STAR):
            summary.placements.append(SummaryPlacement(origin, event.handle.sub, _with_device_origins(event, walker)))
        elif event.handle.obj in globals_read:
            # a name the function never binds is the module's (`model` of a script's `def train():`)
            summary.placements.append(SummaryPlacement(globals_read[event.handle.obj], event.handle.sub,
                                                       _with_device_origins(event, walker)))
    for built in walker.scope.of_type(HolderEvent):
        var = _kept_as(walker, built)
        if var:
            models = _caller_parts(walker, built.models) + _kept_parts(walker, built.models)
            if models:
                summary.self_holders.append(KeptHolder(built.kind, built.label, models, built.bucket_view, var))
    summary.self_holders.extend(_kept_in_containers(walker))
    summary.returns_value = bool(walker.returns)
    summary.returns_new_module = bool(walker.returned_new) and all(walker.returned_new)
    if walker.returned_fresh and all(made is not None for made in walker.returned_fresh):
        summary.returns_fresh = tuple(_caller_parts(walker, frozenset().union(*walker.returned_fresh)))
    summary.fields = _returned_fields(walker)
    summary.returned_instances = _returned_instances(walker)
    summary.returned_placements = _returned_placements(walker)
    summary.attributes = _kept_arguments(walker)
    spread = walker.kwargs_spread
    if walker._kwargs_name is not None and spread is not None and all(taken is not None for taken in spread.values()):
        summary.keywords = frozenset(param_names) | frozenset(walker.kwargs_keys) | frozenset().union(*spread.values())
    summary.moves_state = tuple(dict.fromkeys(
        walker.origins[obj] for event in walker.scope.of_type(StateMovedEvent) for obj in sorted(event.objects)
        if obj in walker.origins and walker.origins[obj].kind in ("param", "self")))
    for value in walker.returns:
        holder: HolderEvent = value.holder
        if holder is not None and holder.arrives:
            holder = None  # the optimizer the caller handed in, handed back: the caller's own
        if holder is not None:
            models = _caller_parts(walker, holder.models)
            if models:
                summary.holder = BuiltHolder(holder.kind, holder.label, models, holder.bucket_view)
                summary.holder_kept = _kept_as(walker, holder)
        elif value.handle is not None and _origin_kind(walker, value.handle) in ("param", "self"):
            origin = walker.origins[value.handle.obj]
            if origin.kind == "param":
                summary.returns_param = origin.index
            else:
                summary.returns_self = Part(origin, value.handle.sub)
        elif value.members and not value.holders:
            # a list of attributes, written in the `return` or first bound to a local (`return base_list`)
            summary.returns_self_members = tuple(Part(walker.origins[h.obj], h.sub) for h in sorted(value.members, key=handle_key)
                                                 if h.obj in walker.origins and walker.origins[h.obj].kind == "self")
        if holder is None:
            summary.returned_params.extend(_caller_parts(walker, value.params))
    return summary


def _globals_read(walker: ScopeWalker) -> Dict[int, Origin]:
    """The objects of the names a function reads and never binds (not `self`'s): the module's globals
    as its callers see them, by the object the walk gave each."""
    return {handle.obj: Origin(GLOBAL, key) for key, handle in walker.free_objects().items()
            if key != "self" and not key.startswith("self.") and "." not in key}


def _origin_kind(walker: ScopeWalker, handle) -> Optional[str]:
    origin = walker.origins.get(handle.obj)
    return origin.kind if origin is not None else None


def _kept_parts(walker: ScopeWalker, handles) -> List[Part]:
    """The objects among `handles` that the function built and keeps on its object (`self.netG =
    define_G(...)` in `initialize()`, a new object a call returned or one built here): for a caller,
    that attribute of the object it called."""
    def kept(h) -> bool:
        origin = walker.origins.get(h.obj)
        return h.text.startswith("self.") and (origin is None or origin.kind == "local" and origin.key == h.text)

    def of_self(h) -> bool:  # `getattr(self, "netG" + str(s))`: a part of the object itself
        origin = walker.origins.get(h.obj)
        return bool(h.sub) and origin is not None and origin.key == "self"

    return ([Part(Origin("self", h.text), h.sub) for h in handles if kept(h)]
            + [Part(Origin("self", f"self.{h.sub[0]}"), h.sub[1:]) for h in handles if of_self(h)])


def _caller_parts(walker: ScopeWalker, handles) -> List[Part]:
    """The objects among `handles` that a caller hands in (an argument, or `self.*`), as parts of them."""
    return [Part(walker.origins[h.obj], h.sub) for h in handles
            if h.obj in walker.origins and walker.origins[h.obj].kind in ("param", "self")]


def _kept_in_containers(walker: ScopeWalker) -> List[KeptHolder]:
    """Holders built under a local name that the object keeps in a container attribute at the end
    (`self.optimizers = [opt]`, a list appended to and then kept): the object holds them there."""
    kept: List[KeptHolder] = []
    seen = set()
    for key, binding in walker.env.items():
        if not key.startswith("self.") or "." in key[5:]:
            continue
        for built in binding.holders:
            var = walker.scope.name_of(built) or ""
            if id(built) in seen or built.arrives or built.site.via is not None or var.startswith("self."):
                continue
            models = _caller_parts(walker, built.models)
            if models:
                seen.add(id(built))
                kept.append(KeptHolder(built.kind, built.label, models, built.bucket_view, key))
    return kept


def _returned_placements(walker: ScopeWalker) -> Tuple[PlacementEvent, ...]:
    """The moves and casts of a new object the function returns, as its callers replay them."""
    returned = {value.handle.obj for value in walker.returns
                if value.handle is not None and _origin_kind(walker, value.handle) not in ("param", "self")}
    return tuple(_with_device_origins(event, walker) for event in walker.scope.of_type(PlacementEvent)
                 if event.handle.obj in returned and not event.handle.sub and event.kind in (cat.MOVE, cat.CAST))


def _with_device_origins(event: PlacementEvent, walker: ScopeWalker) -> PlacementEvent:
    """A move's device value, as the arguments and attributes its callers fill in; none when it was
    read from an object of the function's own."""
    origins = tuple(walker.origins.get(obj) for obj in sorted(event.device_of))
    if not origins or any(o is None or o.kind not in ("param", "self") for o in origins):
        return event
    return dataclasses.replace(event, device_origins=origins)


def _kept_arguments(walker: ScopeWalker) -> Dict[str, Part]:
    """The arguments the function keeps in the object's attributes (`self.model = model`), its own
    assignments first, then what the base's constructor kept through `super().__init__(model)`."""
    kept = {}
    for key, binding in walker.env.items():
        origin = walker.origins.get(binding.handle.obj)
        if key.startswith("self.") and key.count(".") == 1 and origin is not None and origin.kind == "param":
            kept[key] = Part(origin, binding.handle.sub)
    for key, handles in walker.base_kept.items():
        own = walker.env.get(key)
        if own is not None and (walker.origins.get(own.handle.obj) or Origin("self", key)).kind != "self":
            continue  # set again after the base's constructor (not merely read: a read sees the object's own)
        for handle in handles:
            origin = walker.origins.get(handle.obj)
            if origin is not None and origin.kind == "param":
                kept.setdefault(key, Part(origin, handle.sub))
    return kept


def _returned_instances(walker: ScopeWalker) -> tuple:
    """The objects of summarised classes the function returns (`return SingleBackend(model, device)`,
    or what a factory it calls returned), with what they keep as the function's own arguments."""

    def parts(handles) -> Tuple[Part, ...]:
        return tuple(_caller_parts(walker, handles))

    found: Dict[str, ReturnedInstance] = {}
    for value in walker.returns:
        instance = walker._instances.get(value.handle.obj) if value.handle is not None else None
        for each in (instance, *instance.others) if instance is not None else ():
            # one per class: two paths that build it (or two walks of its module) keep what either kept
            before = found.get(each.class_name)
            kept, carried = ({key: parts(handles) for key, handles in table.items()}
                             for table in (each.attributes, each.parameter_attributes))
            if before is not None:
                kept = {key: tuple(dict.fromkeys(before.attributes.get(key, ()) + kept.get(key, ())))
                        for key in {**before.attributes, **kept}}
                carried = {key: tuple(dict.fromkeys(before.parameter_attributes.get(key, ()) + carried.get(key, ())))
                           for key in {**before.parameter_attributes, **carried}}
            found[each.class_name] = ReturnedInstance(each.methods, kept, each.locate, each.class_name, carried)
    return tuple(found.values())


def _kept_as(walker: ScopeWalker, holder: HolderEvent) -> str:
    """The attribute of the object a holder the function builds is kept in (`self.optimizer`), as the
    summary's `self_holders` name it; "" when it is kept in none."""
    var = walker.scope.name_of(holder)
    # one a method of this object keeps on it (a base's `__init__` run through `super()` or by its name,
    # `self.setup()`) is this function's too: the object keeps it, whichever of its methods built it
    kept_by_own_method = holder.var == var and not holder.arrives and var is not None and var.count(".") == 1
    return var if var and var.startswith("self.") and (holder.site.via is None or kept_by_own_method) else ""


def _returned_fields(walker: ScopeWalker) -> tuple:
    """What each position of the tuple a function returns holds, when every `return` gives a tuple of
    the same length and one position is known: a holder built on what the caller handed in, an
    argument handed back (`return model.to(rank), None`: the caller's object, placed), or what a
    managed call returned."""
    shapes = [value.fields for value in walker.returns if value.fields]
    if not shapes or len(shapes) != len(walker.returns) or len({len(shape) for shape in shapes}) != 1:
        return ()
    new = _new_positions(walker, shapes)
    fields = []
    for position in range(len(shapes[0])):
        entry = None
        for shape in shapes:
            value = shape[position]
            holder = value.holder
            if holder is not None and holder.arrives:
                holder = None  # the optimizer the caller handed in, handed back: the caller's own
            if position in new:
                entry = ReturnedField("new", new[position])
            elif holder is not None:
                places = {shape[i].handle.obj: i for i in new}
                models = _caller_parts(walker, holder.models) + [
                    Part(Origin("field", str(places[h.obj]), places[h.obj]), h.sub) for h in holder.models if h.obj in places]
                if models:
                    entry = ReturnedField("holder", BuiltHolder(holder.kind, holder.label, models, holder.bucket_view),
                                          _kept_as(walker, holder))
            elif value.wrapper and value.handle is not None:
                # `return module, DDP(module)`: the wrapper of what another position holds
                inner = next((i for i, other in enumerate(shape) if i != position and not other.wrapper
                              and other.handle is not None and other.handle.obj == value.handle.obj), None)
                if inner is not None:
                    entry = ReturnedField("wrapper", (value.wrapper, inner))
            elif value.managed:
                entry = ReturnedField("managed", None)  # what `booster.boost(...)` returned, handed on
            elif entry is None and value.handle is not None:
                origin = walker.origins.get(value.handle.obj)
                if origin is not None and origin.kind == "param" and origin.index < (1 << 30):
                    entry = ReturnedField("param", origin.index)
        fields.append(entry)
    return tuple(fields) if any(entry is not None for entry in fields) else ()


def _new_positions(walker: ScopeWalker, shapes) -> Dict[int, Tuple[PlacementEvent, ...]]:
    """The positions of a returned tuple that hold a module the function made and an optimizer at another
    position holds (`return model, Adam(model.parameters())`), in every `return` alike: each with the
    moves and casts the function made of it, which its callers replay on the object their call made."""
    found: Dict[int, Tuple[PlacementEvent, ...]] = {}
    for position in range(len(shapes[0])):
        objects = set()
        for shape in shapes:
            value = shape[position]
            held = {h.obj for other in shape for holder in other.holders for h in holder.models}
            if (value.handle is None or value.handle.sub or _origin_kind(walker, value.handle) != "local"
                    or value.handle.obj not in held or value.holders):
                break
            objects.add(value.handle.obj)
        else:
            found[position] = tuple(_with_device_origins(event, walker) for event in walker.scope.of_type(PlacementEvent)
                                    if event.handle.obj in objects and not event.handle.sub
                                    and event.kind in (cat.MOVE, cat.CAST))
    return found


def _definitions(body: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Function and class definitions in a block, including those under if/try/with, not in other defs."""
    for statement in body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            yield statement
        elif isinstance(statement, cst.BaseCompoundStatement):
            for suite in suites(statement):
                yield from _definitions(suite_body(suite))


def _top_level_simple_statements(body: Sequence[cst.CSTNode]) -> Iterator[cst.BaseSmallStatement]:
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            yield from statement.body
        elif isinstance(statement, (cst.If, cst.Try)):
            for suite in suites(statement):
                yield from _top_level_simple_statements(suite_body(suite))
