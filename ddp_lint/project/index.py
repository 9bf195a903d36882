"""The checked project as one program: summaries of its modules' functions and classes, on demand.

A file is still analysed on its own; a call of a function or class that an import brings in from
another module of the project (`from .utils import smart_ddp`, `from trainer import Trainer`) asks
this index, which summarises the one function or class asked for, the way same-file helpers are
summarised (what it does to its arguments: moves, casts, wraps, replaces; which holders it builds on
them). Only an excerpt is parsed: the module's import lines, the definition and the module's
definitions it calls, and only when the definition's text carries a holder or placement token
(the prefilter's discipline). Those modules are recorded with the hash of their bytes, so that the
results cache knows a finding in `train.py` depends on `trainer.py`.

What is not followed: a name that leads outside the project (the catalog speaks for torch and the
libraries), the imports of PyTorch's own package when its sources are the checked tree, a module
that does not parse, and a cycle of calls (the inner call then has no summary, as a recursive
same-file helper has none).
"""
from __future__ import annotations

import ast
import bisect
import dataclasses
import gc
import hashlib
import os
import re
from functools import lru_cache
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from .. import catalog as cat
from ..analysis.aliases import alias_in
from ..syntax import BUILTIN_NAMES
from .modules import Resolver, package_root

# `from x import a, b` / `from . import c` / `import x.y as z`, enough to see which project modules a
# file could reach without parsing it (the prefilter's question). Matched after a newline (the text is
# read with one put in front) rather than at `^` in multiline mode: a pattern that opens with a literal
# is searched for by that character, one opening with `^` is tried at every position (2x slower).
_IMPORT = re.compile(r"\n[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|(?:[\w, \t]|\\\n)+)|import[ \t]+([\w., \t]+))")


class ProjectIndex:
    def __init__(self, roots: Iterable[str] = (), catalog: cat.Catalog = cat.DEFAULT_CATALOG) -> None:
        self.resolver = Resolver(roots)
        self.catalog = catalog
        self._modules: Dict[Tuple[str, str], object] = {}  # (path, name) -> summaries of that excerpt, or None
        self._located: Dict[Tuple[str, str], tuple] = {}  # (path, name) -> (its summary, that summary located)
        self._texts: Dict[str, Optional[str]] = {}
        self._hashes: Dict[str, str] = {}
        self._reach: Dict[Tuple[str, str, bool, int], Tuple[bool, bool]] = {}
        self._sharp: Dict[Tuple[str, str, bool, int], Tuple[bool, bool]] = {}  # the prefilter's (see _sharp_halves)
        self._reach_far: Dict[Tuple[str, str, bool, int], Tuple[bool, bool]] = {}  # see _definition_halves
        self.consulted: Set[str] = set()  # paths whose content the current file's result depends on
        self._resolved: Dict[Tuple[str, str, bool], Optional[Tuple[str, str]]] = {}
        self._trees: Dict[str, Optional[List[str]]] = {}
        self._calls: Dict[str, List[tuple]] = {}
        self._returns: Dict[Tuple[str, str, int], Set[Tuple[str, str]]] = {}  # see _returned_classes
        self._hierarchies: Dict[Tuple[str, str], Tuple[Set[str], Set[str]]] = {}  # see _hierarchy_methods
        self._analyses: Dict[str, tuple] = {}  # see analysis_of
        self._defined: Dict[Tuple[str, str], bool] = {}  # see defines_function
        self._callable: Dict[Tuple[str, bool], tuple] = {}  # see _called_definitions
        self._findings: Dict[Tuple[str, int], Tuple[object, Set[str]]] = {}  # see findings_of
        self._settled = (0, 0)  # how many summaries and analysed callers the collector was last told to leave alone

    # ----- for the cache ---------------------------------------------------------------------------
    def begin(self) -> None:
        """A new file is about to be analysed: start recording what it depends on."""
        self.consulted = set()

    def dependencies(self) -> Dict[str, str]:
        return {path: self._hashes[path] for path in sorted(self.consulted) if path in self._hashes}

    def settle(self) -> None:
        """A file is done. The summaries its analysis added stay until the process ends (LibCST trees of
        whole classes among them), and every full collection of the cyclic collector walked them again:
        1.3 s of DeepSpeed's 7.7 s. Collected once now and frozen, later collections skip them."""
        grown = (len(self._modules), len(self._calls))
        if grown == self._settled:
            return
        self._settled = grown
        gc.collect()
        gc.freeze()

    # ----- reading ---------------------------------------------------------------------------------
    def _text(self, path: str) -> Optional[str]:
        if path not in self._texts:
            from ..documents.python import InputError, read_source

            try:
                source = read_source(path)
                self._texts[path] = source.text
                self._hashes[path] = hashlib.sha256(source.raw).hexdigest()
            except InputError:
                self._texts[path] = None
        self.consulted.add(path)
        return self._texts[path]

    def _summaries(self, path: str, name: str):
        """Summaries of one definition of a module, parsed with LibCST from a small program made of the
        module's import lines, the definition and the module's own definitions it calls (found by
        text): a whole module can be thousands of lines, of which a caller needs one function."""
        key = (path, name)
        if key not in self._modules:
            self._modules[key] = None  # a cycle of definitions asking each other sees nothing
            text = self._text(path)
            if text is None:
                return None
            program = _excerpt(text, name)
            if program is None:
                return None
            source, line_map = program
            import libcst as cst  # only here: a flake8 worker that never follows a call never loads it

            try:
                module = cst.parse_module(source)
            except (cst.ParserSyntaxError, RecursionError, MemoryError):
                return None
            from ..analysis.module import ModuleSummaries

            self._modules[key] = (ModuleSummaries(module, self.catalog, self, path, source), module, line_map)
        else:
            self.consulted.add(path)
        return self._modules[key]

    # ----- for the walker ----------------------------------------------------------------------------
    def lookup(self, dotted: str, importer: str):
        """The summary of the function or class that `dotted` (as imported in `importer`) names."""
        if _from_outside(dotted) or _outside_package(importer):
            return None
        found = self._resolve(dotted, importer)
        if found is None:
            return None
        path, inner = self._through_stars(*found)
        if inner.count(".") > 1:
            return None
        if inner and self._definition_halves(path, inner, True, 0) == (False, False) and not self._inherits(path, inner) and not any(
                # a class's other methods count for the objects it builds (`engine.prepare()`)
                self._definition_halves(path, f"{inner}.{method}", True, 0) != (False, False)
                for method in (self._class_methods(path, inner) if "." not in inner else ())) and not self._hands_objects(path, inner):
            # Neither a holder nor a placement token in its text: its summary could hold nothing, and
            # parsing its module (LibCST) costs more than the rest of the file's analysis.
            return None
        entry = self._summaries(path, inner.split(".")[0])  # `Trainer.setup`: the class's excerpt
        if entry is None:
            return None
        summaries, module, line_map = entry
        summary = summaries.get(inner)
        if summary is None or summary.locate is not None:
            return summary
        # The module's summaries stay as its own walks made them; its callers get a copy that says
        # where the definition lies (made once per definition, not at every call)
        located = self._located.get((path, inner))
        if located is None or located[0] is not summary:
            located = self._located[(path, inner)] = (summary, dataclasses.replace(
                summary, locate=_locator(path, module, line_map), key=(os.path.abspath(path), inner)))
        return located[1]

    def _returned_classes(self, path: str, name: str, depth: int = 0) -> Set[Tuple[str, str]]:
        """(path, class) of each project class whose object the function `name` may return: `return
        Backend(...)` of a class defined or imported there (a function-local import too), or what a
        function it returns the call of returns in turn (two calls deep)."""
        key = (path, name, depth)
        if key in self._returns:
            return self._returns[key]
        self._returns[key] = found = set()
        text = self._text(path)
        block = _definition_block(text, name) if text is not None else None
        if block is None or block.startswith("class"):
            return found
        imported = _imported_names(text)
        for callee in set(_RETURNED_CALLEE.findall(block)):
            head, _, rest = callee.partition(".")
            if _definition_block(text, callee) is not None:
                where = (path, callee)
            elif head in imported and not _from_outside(imported[head]):
                where = self._resolve(imported[head] + (f".{rest}" if rest else ""), path)
            else:
                continue
            if where is None or not where[1] or "." in where[1]:
                continue
            built = _definition_block(self._text(where[0]) or "", where[1])
            if built is not None and built.startswith("class"):
                found.add(where)
            elif built is not None and depth < 2:
                found |= self._returned_classes(where[0], where[1], depth + 1)
        return found

    def _through_stars(self, path: str, inner: str, depth: int = 0) -> Tuple[str, str]:
        """Where a name a package re-exports with `from .strategy_wrappers import *` is defined: the
        first star-imported module of the project that defines it (the package's own definitions and
        named imports first); the name where it was asked, when none does."""
        head = inner.partition(".")[0]
        text = self._text(path)
        if not head or text is None or depth > 2 or "import" not in text or "*" not in text:
            return path, inner
        if _definition_block(text, head) is not None or head in _imported_names(text):
            return path, inner
        for module in _STAR_IMPORT.findall(text):
            found = self.resolver.resolve(module, path)
            if found is None or found[1]:
                continue  # no module of the project (a library's names are the catalog's)
            where = self._text(found[0])
            if where is not None and (_definition_block(where, head) is not None or "*" in where):
                deeper = self._through_stars(found[0], inner, depth + 1)
                if deeper[0] != found[0] or _definition_block(where, head) is not None:
                    return deeper
        return path, inner

    def _hands_objects(self, path: str, inner: str, depth: int = 0) -> bool:
        """Whether a definition with neither a holder nor a placement token may still matter to its
        callers: a class whose constructor keeps an argument (`self.backbone = backbone`: moving the
        object moves it) or hands its arguments to its base's (which may keep them), or a function that
        returns what a call makes (a factory: `return SingleBackend(model, device)`, whose object's
        methods may move the model)."""
        text = self._text(path)
        class_name, _, method = inner.partition(".")
        block = _definition_block(text, class_name) if text is not None else None
        if block is None and text is not None and depth < 3:
            # a package re-exporting the name (`from .common_templates import SupervisedTemplate`)
            dotted = _imported_names(text).get(class_name)
            found = self.resolver.resolve(dotted, path) if dotted else None
            if found is not None and found[1] and "." not in found[1]:
                return self._hands_objects(found[0], found[1] + (f".{method}" if method else ""), depth + 1)
        if block is None:
            return False
        if block.startswith("class"):
            # the class itself, or its constructor: what the new object keeps of the caller's objects
            init = _method_block(block, "__init__") if method in ("", "__init__") else ""
            return bool(_KEEPS_ARGUMENT.search(init) or _HANDS_TO_BASE.search(init))
        if method:
            return False
        # a function that hands back what it was handed (`return model` after changing it in place): the
        # caller's name keeps the object it had
        header = block[:block.find(")")]
        if set(_RETURNED_NAME.findall(block)) & set(_PARAMETER_NAME.findall(header)):
            return True
        if _RETURNS.search(block) and _PARAMETERS_CALL.search(block):
            # a function that returns what it collects of a module's parameters (`separate_bn_paras(
            # backbone)`, lists of `layer.parameters()`): the optimizer its caller builds on them holds them
            return True
        return any(not self._library_call(callee, text, path) for callee in _RETURNED_CALLEE.findall(block))

    def _library_call(self, callee: str, text: str, importer: str) -> bool:
        """Whether a call is made through a name the module imports from outside the project
        (`torch.cuda.is_available()`, `np.zeros(...)`): what it returns is none of the caller's objects
        (the catalog speaks for the libraries it knows)."""
        head, _, rest = callee.partition(".")
        if not rest and head in _VALUE_BUILTINS:
            return True
        dotted = _imported_names(text).get(head)
        if dotted is None or dotted.startswith(".") or _definition_block(text, head) is not None:
            return False
        return _from_outside(dotted) or self._resolve(dotted + (f".{rest}" if rest else ""), importer) is None

    # ----- for the callee side ------------------------------------------------------------------------
    def call_facts(self, key: Tuple[str, str], asked=None, own_module: bool = False) -> Optional[List[tuple]]:
        """What the project's other modules do before calling the function or class `key` ((path,
        name)): for each call, the signatures of the callee's placements already made on what is passed
        (see ScopeWalker.calls). A module is analysed only when its text names the callee and imports
        it, and `asked(path, text)` (when given) says so; `own_module`: the callee's module's calls too;
        None when the tree is too large to search (every caller is then unknown)."""
        path, name = key
        if not name or name.count(".") > 1:
            return []  # a nested definition: not reached from other modules
        files = self._tree_files(package_root(path)[0])
        if files is None:
            return None
        if "." in name:
            return self._method_call_facts(key, files)
        token = re.compile(r"\b%s\s*\(" % re.escape(name))
        module = package_root(path)[1].rsplit(".", 1)[-1]
        facts = []
        for candidate in files:
            if candidate == path and not own_module:
                continue  # the callee's own file: its analysis has them
            text = self._peek(candidate)
            # the substring first: a pattern that opens with `\b` is tried at every position
            if text is None or name not in text or not token.search(text):
                continue
            # it must import the name or its module (`from loop import train`, `import loop`), or may
            # through a star import (`from deep_rl import *`; its analysis resolves the name or not)
            if candidate != path and not any(
                    part in (name, module) for dotted in _imported_names(text).values() for part in dotted.split(".")) \
                    and not (_may_star_import(text) and _STAR_IMPORT.search(text)):
                continue
            if asked is not None and not asked(candidate, text):
                self.consulted.add(candidate)  # it calls the callee: what it places may change the answer
                continue
            facts.extend(fact for fact in self._calls_in(candidate) if fact[0] == key)
        return facts

    def defines_function(self, name: str, path: str) -> Optional[bool]:
        """Whether some module of `path`'s tree defines a function or method `name` (`def name(` at any
        depth); None when the tree is too large to search. Read from the texts, never parsed: the
        modules that do define it are consulted (the answer depends on them)."""
        top = package_root(path)[0]
        files = self._tree_files(top)
        if files is None:
            return None
        if (top, name) not in self._defined:
            token = re.compile(r"\bdef[ \t]+%s[ \t]*\(" % re.escape(name))
            defining = [f for f in files if name in (self._peek(f) or "") and token.search(self._peek(f))]
            self.consulted.update(defining)
            self._defined[(top, name)] = bool(defining)
        return self._defined[(top, name)]

    def _method_call_facts(self, key: Tuple[str, str], files: List[str]) -> Optional[List[tuple]]:
        """A method's callers are the calls through objects of its class, wherever they are made (the
        callee's own file too). Every `.method(` call of the tree's code must be one the analysis
        attributes to this class, or to another class that defines a method of that name itself; a call
        through an object it cannot name, through `self` outside the class (a subclass's), or on an
        object of a class that inherits the method (perhaps from this one) leaves the callers unknown."""
        from ..analysis.summary import LIBRARY_MODULE  # here: the flake8 plugin imports this module without LibCST

        path, name = key
        owner, _, method = name.partition(".")
        token = re.compile(r"\.\s*%s\s*\(" % re.escape(method))
        facts = []
        for candidate in files:
            text = self._peek(candidate)
            if text is None or method not in text:
                continue
            through_others, through_self = _object_calls(text, token)
            if candidate == path:  # the class's own `self.method()` calls are its scope's
                through_self -= _object_calls(self._class_block(path, owner) or "", token)[1]
            if not through_others + through_self:
                continue
            calls = [fact for fact in self._calls_in(candidate) if fact[0][1].partition(".")[2] == method]
            if len(calls) < through_others + through_self or not all(
                    fact[0] == key or self._defines_itself(*fact[0])
                    or (fact[0][0] == LIBRARY_MODULE and self._never_a_module(path, owner, files)) for fact in calls):
                return None
            facts.extend(fact for fact in calls if fact[0] == key)
        return facts

    def _never_a_module(self, path: str, owner: str, files: List[str]) -> bool:
        """Whether no object of the class can be a module: a plain class (no bases but `object`) that
        gives itself no parameters and that no class of the tree derives from. A call on a module by use
        (an optimizer holds its parameters) is then never a call of its method."""
        block = self._class_block(path, owner)
        if block is None or _class_bases(block) not in ((), ("object",)):
            return False
        if _defined_names(block) & cat.PARAMETER_METHODS:
            return False
        derived = re.compile(r"\bclass\s+\w+\s*\([^)]*\b%s\b" % re.escape(owner))
        return not any(owner in text and derived.search(text)
                       for text in map(self._peek, files) if text is not None)

    def _defines_itself(self, path: str, name: str) -> bool:
        """Whether `Class.method` names a method its class defines in its own body."""
        owner, _, method = name.partition(".")
        block = self._class_block(path, owner)
        return block is not None and _method_block(block, method) != ""

    def _tree_files(self, top: str) -> Optional[List[str]]:
        if top not in self._trees:
            found: List[str] = []
            for folder, dirs, names in os.walk(top):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _NOT_SOURCE_FOLDERS
                                 and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg")))
                found.extend(os.path.join(folder, n) for n in sorted(names) if n.endswith(".py"))
                if len(found) > _MAX_TREE_FILES:
                    found = None
                    break
            self._trees[top] = found
        return self._trees[top]

    def findings_of(self, path: str, settings, check):
        """What a check of another module with these settings finds (`check(text, path, settings, index)`
        says it), once per process; None while it is being made (a module whose check asks, through a
        caller's report, for the module asking) or when the module cannot be read. The asking file's
        result depends on that module (and on what its check read)."""
        key = (os.path.abspath(path), id(settings))
        if key not in self._findings:
            text = self._text(path)
            if text is None:
                return None
            self._findings[key] = (None, set())
            asking, self.consulted = self.consulted, {path}
            try:
                self._findings[key] = (check(text, path, settings, self), self.consulted)
            finally:
                self.consulted = asking
        findings, read = self._findings[key]
        self.consulted |= read | {path}
        return findings

    def text_of(self, path: str) -> Optional[str]:
        """A module's text as the index read it (for a related location in it)."""
        return self._peek(path)

    def _peek(self, path: str) -> Optional[str]:
        """A file's text without making the current file depend on it (most candidates do not call)."""
        consulted = set(self.consulted)
        text = self._text(path)
        self.consulted = consulted
        return text

    def remember_calls(self, path: str, text: str, calls: List[tuple]) -> None:
        """The calls a checked file's own analysis found (analysed as `_calls_in` would: no overwrite
        flag, the text on disk): a caller of another file's API need not be analysed twice."""
        path = os.path.abspath(path)
        if path not in self._calls and self._peek(path) == text:
            self._calls[path] = list(calls)

    def locator(self, path: str):
        """Where a node of a caller's analysis (`_calls_in`, `remember_calls`) lies in that module: (path,
        line, 0-based column), found by its text (`found_once`): the callers' trees are not kept (each
        checked file's would stay alive for the whole run, for the few reports that name a caller's line);
        (path, 1, 0) when it is not there once."""
        def locate(node) -> Tuple[str, int, int]:
            text = self.text_of(path)
            from ..analysis.names import found_once  # here: the flake8 plugin imports this module without LibCST

            found = found_once(text, node) if text is not None else None
            return (path,) + found if found is not None else (path, 1, 0)

        return locate

    def _calls_in(self, path: str) -> List[tuple]:
        self.consulted.add(path)
        path = os.path.abspath(path)
        if path not in self._calls:
            self._calls[path] = []
            text = self._text(path)
            import libcst as cst
            from ..analysis.module import analyze_module

            try:
                module = cst.parse_module(text)
            except (cst.ParserSyntaxError, RecursionError, MemoryError):
                return []
            analysis = analyze_module(module, self.catalog, False, self, path, source=text)
            self._calls[path] = analysis.calls
            self._keep_analysis(path, text, module, analysis)
        return self._calls[path]

    def _keep_analysis(self, path: str, text: str, module, analysis) -> None:
        """A caller analysed for its callee's sake is the analysis its own check would make (as
        `remember_calls` says the other way round): kept for that check, which is often next in the
        tree's order. unsloth's 50,000-line `routes/inference.py` was analysed twice, 11 s each."""
        if len(self._analyses) >= _KEPT_ANALYSES:
            del self._analyses[next(iter(self._analyses))]  # the oldest: its file was checked or is not a candidate
        self._analyses[path] = (text, module, analysis)

    def analysis_of(self, path: str, text: str):
        """(the LibCST module, the module analysis) the callee side already made of this file's text, as
        `analyze_module` makes it with this index and no overwrite flag; None when there is none."""
        kept = self._analyses.pop(os.path.abspath(path), None)
        if kept is None or kept[0] != text:
            return None
        self.consulted.add(path)
        return kept[1], kept[2]

    # ----- for the prefilter -------------------------------------------------------------------------
    def follows(self, path: str) -> bool:
        """Whether this file's imports are followed at all (not inside a package the catalog describes)."""
        return not _outside_package(path)

    def called_halves(self, text: str, importer: str, with_wraps: bool,
                      classes_only: bool = False) -> Dict[str, Tuple[bool, bool]]:
        """For each name this text calls through a project import (a module alias for `mod.f(...)`),
        whether what it calls could hold or place, judged on the text of the definition's own block
        (a `def` at the margin, or a class's `__init__`); what that calls in turn is not followed
        here (the walker follows it once the file is parsed). `classes_only`: only calls of names
        spelled as classes are looked at."""
        halves: Dict[str, Tuple[bool, bool]] = {}

        def add(local: str, h: bool, p: bool) -> None:
            if h or p:
                before = halves.get(local, (False, False))
                halves[local] = (before[0] or h, before[1] or p)

        attribute_calls: Optional[Set[str]] = None
        for local, (path, name) in self._called_definitions(text, importer, True, classes_only):
            if classes_only and not name[:1].isupper():
                continue
            add(local, *self._sharp_halves(path, name, with_wraps))
            if halves.get(local) == (True, True):
                continue  # the caller may order these halves: nothing more to learn of this name
            if not name[:1].isupper():
                # a factory (`backend = choose_backend(model, device)`): the objects it returns are
                # the classes it builds, whose constructors ran and whose methods the text may call
                if attribute_calls is None:
                    attribute_calls = set(_ATTRIBUTE_CALLS.findall(text))
                for where, built in self._returned_classes(path, name):
                    for each in (built, *(f"{built}.{m}" for m in self._class_methods(where, built) & attribute_calls)):
                        add(local, *self._sharp_halves(where, each, with_wraps))
            else:
                # `engine = Engine(model); engine.prepare()`: the methods the text calls on any object
                # count, each by its own block (the walker follows those on objects the class built)
                if attribute_calls is None:
                    attribute_calls = set(_ATTRIBUTE_CALLS.findall(text))
                for method in self._class_methods(path, name) & attribute_calls:
                    add(local, *self._sharp_halves(path, f"{name}.{method}", with_wraps))
        bases = self._base_classes(text, importer)
        if bases:
            # A base class's methods run through `self.m()` and `super().m()`: those this file calls
            # and does not define itself count, each by its own block; and, in a file that may build
            # an optimizer itself, its placement methods (`to()`, `cuda()`), which the class's users
            # call after its constructor.
            called = set(_SELF_CALL.findall(text)) | (set() if classes_only else set(cat.METHOD_PLACEMENTS))
            inherited = (called - _defined_names(text)) | set(_SUPER_CALL.findall(text))
            for local, (path, name) in bases:
                for method in inherited:
                    add(local, *self._sharp_halves(path, f"{name}.{method}", with_wraps))
        return halves

    def type_alias(self, dotted: str, importer: str):
        """The generic alias `dotted` (as imported in `importer`) stands for, when a module of the
        project defines one (analysis/aliases.py); read from its text, never parsed."""
        if not dotted or _from_outside(dotted) or _outside_package(importer):
            return None
        found = self.resolver.resolve(dotted, importer)
        if found is None or not found[1] or "." in found[1]:
            return None
        text = self._peek(found[0])
        return alias_in(text, found[1]) if text is not None else None

    def names_module_class(self, dotted: str, importer: str, depth: int = 0) -> bool:
        """Whether `dotted` (as named in `importer`) is a class of the project derived from torch's
        `nn.Module` through its bases, or a module-level alias of a union of such classes
        (`ModelWithoutAttention = Union[TabMlp, TabNet]`): types from declarations."""
        if not dotted or depth > 2 or _from_outside(dotted) or _outside_package(importer):
            return False
        found = (importer, dotted) if "." not in dotted and self._class_block(importer, dotted) is not None \
            else self._resolve(dotted, importer)
        if found is None or not found[1] or "." in found[1]:
            return False
        bases = self._library_bases(*found, 0)  # a class here or one a package re-exports
        if bases or self._class_block(*found) is not None:
            return any(base in cat.MODULE_BASE_CLASSES for base in bases)
        text = self._text(found[0])
        alias = alias_in(text, found[1]) if text is not None else None
        if alias is None or not alias[0].startswith(("Union[", "typing.Union[")):
            return False
        members = [name for name in _IDENTIFIER.findall(alias[0].split("[", 1)[1]) if name != "None"]
        return bool(members) and all(self.names_module_class(_imported_names(text).get(name, name), found[0], depth + 1)
                                     for name in members)

    def is_plain_class(self, dotted: str, importer: str) -> bool:
        """Whether `dotted` (as imported in `importer`) is a class of the project with no bases (or
        only `object`): read from its header, never parsed."""
        if not dotted or _from_outside(dotted) or _outside_package(importer):
            return False
        found = self.resolver.resolve(dotted, importer)
        if found is None or not found[1] or "." in found[1]:
            return False
        block = self._class_block(found[0], found[1])
        return block is not None and _class_bases(block) in ((), ("object",))

    def defines(self, dotted: str, method: str, importer: str) -> Optional[bool]:
        """Whether the project class `dotted` (as imported in `importer`) defines `method` itself, read
        from its text; None when it is no class of the project found."""
        if _from_outside(dotted) or _outside_package(importer):
            return None
        found = self.resolver.resolve(dotted, importer)
        if found is None or not found[1]:
            return None
        path, inner = self._through_stars(*found)
        block = self._class_block(path, inner) if "." not in inner else None
        return None if block is None else method in _defined_names(block)

    def _inherits(self, path: str, inner: str) -> bool:
        """`Class.method` where the class (a class with bases) does not define the method: its bases may."""
        owner, _, method = inner.partition(".")
        if not method or "." in method:
            return False
        block = self._class_block(path, owner)
        return block is not None and bool(_class_bases(block)) and method not in _defined_names(block)

    def _class_block(self, path: str, name: str) -> Optional[str]:
        """The text of the class `name` defines in the module at `path`; None when it is no class there."""
        text = self._text(path)
        block = _definition_block(text, name) if text is not None else None
        return block if block is not None and block.startswith("class") else None

    def _class_methods(self, path: str, name: str) -> Set[str]:
        block = self._class_block(path, name)
        text = self._text(path) if block is None else None
        if text is not None:
            # a class a package re-exports (`from super_gradients import Trainer`): its methods are
            # those of the module that defines it
            found = self._defined_where(path, text, name)
            block = self._class_block(*found) if found is not None else None
        if block is None:
            return set()
        return _defined_names(block) - {"__init__"}

    def _base_classes(self, text: str, importer: str) -> Set:
        found: Set = set()
        imported = _imported_names(text)
        for bases in _CLASS_BASES.findall("\n" + text):
            for base in re.split(r"[,\s]+", bases):
                head = base.split(".")[0]
                if head in imported and not _from_outside(imported[head]):
                    dotted = imported[head] + base[len(head):]
                    resolved = self.resolver.resolve(dotted, importer)
                    if resolved is not None and resolved[1] and "." not in resolved[1]:
                        found.add((head, resolved))
        return found

    def _called_definitions(self, text: str, importer: str, by_local: bool = False, classes_only: bool = False,
                            calls_in: Optional[str] = None) -> Set:
        """(path, name) of the project definitions the text calls through its imports: `f(` for an
        imported function or class, `mod.f(` through an imported module (`classes_only`: `Agent(`
        and `mod.Agent(` only). Each import is resolved first, and the text is searched for calls of
        only the names whose calls could count: a search for every imported name cost more than the
        rest of the check on transformers' model files, which import dozens of names each.
        `calls_in`: a part of the text (one definition's block), where the calls are searched for."""
        found: Set = set()
        if _outside_package(importer):
            return found
        if calls_in is None:
            imported, searched = self._callable_imports(text, importer, classes_only)
            starred = {}
        else:  # a block of a module the index read: its imports are asked for again by its other blocks
            key = (importer, classes_only)
            if key not in self._callable:
                self._callable[key] = self._callable_imports(text, importer, classes_only) + (
                    self._star_imported(text, importer),)
            imported, searched, starred = self._callable[key]
        for local, attribute in _calls_through(text if calls_in is None else calls_in, searched):
            if (attribute is not None) != searched[local]:
                continue  # a module called, or an attribute of a definition
            name = f"{imported[local]}.{attribute}" if attribute else imported[local]
            if classes_only and not name.rsplit(".", 1)[-1][:1].isupper():
                continue
            resolved = self._resolve(name, importer)
            if resolved is not None and resolved[1] and "." not in resolved[1]:
                found.add((local, resolved) if by_local else resolved)
        for local, resolved in (self._star_imported(text, importer) if calls_in is None else starred).items():
            if calls_in is not None and not re.search(rf"\b{re.escape(local)}\s*\(", calls_in):
                continue
            if not classes_only or local[:1].isupper():
                found.add((local, resolved) if by_local else resolved)
        return found

    def _callable_imports(self, text: str, importer: str, classes_only: bool) -> Tuple[Dict[str, str], Dict[str, bool]]:
        """The text's imports of project names (local -> dotted), and of those the ones whose calls
        could count (local -> whether it is a module: its attributes are what is called)."""
        imported = {local: dotted for local, dotted in _imported_names(text).items()
                    if not _from_outside(dotted)}
        searched: Dict[str, bool] = {}
        for local, dotted in imported.items():
            resolved = self._resolve(dotted, importer)
            # `local.attribute(` of a definition resolves to `name.attribute` or to a module, and a name
            # that leads nowhere has no attribute that leads anywhere but to a module: neither counts
            if resolved is None or "." in resolved[1]:
                continue
            if not resolved[1]:
                searched[local] = True
            elif not classes_only or dotted.rsplit(".", 1)[-1][:1].isupper():
                searched[local] = False
        return imported, searched

    def _star_imported(self, text: str, importer: str) -> Dict[str, Tuple[str, str]]:
        """The definitions the text calls by a name only a star import of a project module binds
        (`from model import *`, then `SessionGraph(opt)`): local name -> (path, name), as the walker
        resolves them (`ImportTable.starred`, then the index's lookup through re-exporting packages)."""
        modules = _STAR_IMPORT.findall(text) if _may_star_import(text) else ()
        if not modules:
            return {}
        called = set(_PLAIN_CALL.findall(text)) - set(_imported_names(text)) - _defined_names(text) - _NOT_STARRED
        found: Dict[str, Tuple[str, str]] = {}
        for module in modules:
            package = self._resolve(module, importer)
            if package is None or package[1]:
                continue  # no module of the project (a library's names are the catalog's)
            for name in sorted(called - found.keys()):
                if _definition_block(text, name) is not None:
                    continue  # the text's own class
                where, inner = self._through_stars(package[0], name)
                defining = self._text(where)
                if inner == name and defining is not None and _definition_block(defining, name) is not None:
                    found[name] = (where, name)
        return found

    def _resolve(self, name: str, importer: str) -> Optional[Tuple[str, str]]:
        key = (name, os.path.dirname(importer), os.path.basename(importer) == "__init__.py")
        if key not in self._resolved:
            self._resolved[key] = self.resolver.resolve(name, importer)
        return self._resolved[key]

    def _definition_halves(self, path: str, name: str, with_wraps: bool, depth: int,
                           far: bool = False) -> Tuple[bool, bool]:
        """`name` is a function, a class (its `__init__`) or `Class.method`: the text stage's halves of
        its block and of what it calls in its module (the walker follows a call only when they say one,
        and then follows what that calls in turn, wherever it is); `far`: and of what it calls of the
        project's other modules (for the prefilter, which judges a file by these answers alone)."""
        return self._halves(path, name, with_wraps, depth, self._reach_far if far else self._reach, _text_halves)

    def _sharp_halves(self, path: str, name: str, with_wraps: bool) -> Tuple[bool, bool]:
        """The same question with each block also asked the tree stage's questions: for the prefilter,
        where a predicate like `is_optimum_available()` (the text stage's holder word) let hundreds of
        files through to an analysis that could find nothing."""
        h, p = self._definition_halves(path, name, with_wraps, 0, far=True)
        if not (h or p):
            return h, p
        sh, sp = self._halves(path, name, with_wraps, 0, self._sharp, _tree_halves)
        return h and sh, p and sp

    def _halves(self, path: str, name: str, with_wraps: bool, depth: int, memo: Dict, judge) -> Tuple[bool, bool]:
        # per depth: a definition asked with calls left to follow answers more than at the end of a
        # chain, and the answer must not depend on which file asked first
        key = (path, name, with_wraps, depth)
        if key in memo:
            self.consulted.add(path)
            return memo[key]
        text = self._text(path)
        result = (False, False)
        if text is not None:
            class_name, _, method = name.partition(".")
            block = _definition_block(text, class_name)
            bases: Tuple[bool, bool] = (False, False)
            a_method = block is not None and block.startswith("class") and method not in ("", "__init__")
            if a_method and method not in self._hierarchy_methods(path, class_name)[0]:
                memo[key] = result
                return result
            if block is not None and block.startswith("class"):
                if method in ("", "__init__"):
                    bases = self._wrapper_base_halves(path, class_name, with_wraps)
                # calling a class runs its `__init__`, not its other methods; one it inherits, or reaches
                # through `super()`, is its bases'
                header, block = block, _method_block(block, method or "__init__")
                if depth < 3 and (not block or _BASE_CALL.search(block)):
                    inherited = self._inherited_halves(path, text, header, method or "__init__", with_wraps, depth,
                                                       memo, judge)
                    bases = (bases[0] or inherited[0], bases[1] or inherited[1])
            if block is not None:
                from ..prefilter import code_only

                code = code_only(block)  # as the prefilter's code stage: docstrings and comments do nothing
                result = judge(block if code is None else code, block, text, self.catalog, with_wraps)
                if result != (True, True) and depth < 3:
                    # what it calls of its own module counts (`self.opt = make_opt(net)` in `__init__`)
                    defined = _top_level_functions(text)
                    for callee in set(_PLAIN_CALL.findall(block if code is None else code)) & defined:
                        if callee != class_name and result != (True, True):
                            h, p = self._halves(path, callee, with_wraps, depth + 1, memo, judge)
                            result = (result[0] or h, result[1] or p)
                    # and, for the prefilter, what it calls of the project's other modules, which the
                    # walker follows once it follows this (`self.model, self.device = model_device(...)`)
                    if result != (True, True) and memo is not self._reach:
                        called = self._called_definitions(text, path, calls_in=block if code is None else code)
                        for where, callee in sorted(called):
                            if result != (True, True) and (where, callee) != (path, class_name):
                                h, p = self._halves(where, callee, with_wraps, depth + 1, memo, judge)
                                result = (result[0] or h, result[1] or p)
                    # and what a method calls of its own class (`self._send_model_to_given_device()`). Not
                    # a constructor's: its self-calls are the template a subclass overrides (`self.place()`),
                    # and a summary of the base's walk would dispatch them to the base's own methods
                    for callee in sorted(set(_SELF_CALL.findall(block if code is None else code)) - {method}) if a_method else ():
                        if result != (True, True):
                            h, p = self._halves(path, f"{class_name}.{callee}", with_wraps, depth + 1, memo, judge)
                            result = (result[0] or h, result[1] or p)
            else:
                resolved = self._defined_where(path, text, class_name)
                if resolved is not None:
                    # at the same depth: a chain of packages re-exporting a name (`super_gradients` ->
                    # `training` -> `sg_trainer`) is no call, and the depth bounds calls followed; a
                    # hop spent each made the definition's own calls go unasked, and its halves with them
                    result = self._halves(resolved[0], resolved[1] + (f".{method}" if method else ""),
                                          with_wraps, depth, memo, judge)
            if block is not None:
                result = (result[0] or bases[0], result[1] or bases[1])
        memo[key] = result
        return result

    def _wrapper_base_halves(self, path: str, name: str, with_wraps: bool) -> Tuple[bool, bool]:
        """A class derived from a library wrapper (`DataParallelModel(DataParallel)`) wraps what it is
        built on, as the walker takes it (effects._derived_placement): the halves of that placement."""
        found = (False, False)
        for base in self._library_bases(path, name, 0):
            placement = self.catalog.call_placement(base)
            if placement is not None:
                found = (found[0] or placement.sync_wrapper,
                         found[1] or cat.counts_for_prefilter(placement, with_wraps))
        return found

    def _inherited_halves(self, path: str, text: str, class_block: str, method: str, with_wraps: bool,
                          depth: int, memo: Dict, judge) -> Tuple[bool, bool]:
        """The halves of a method as the class's bases define it: a class of this module, or one its
        imports bring from the project."""
        found = (False, False)
        for where, inner in self._project_bases(path, text, class_block):
            h, p = self._halves(where, f"{inner}.{method}", with_wraps, depth + 1, memo, judge)
            found = (found[0] or h, found[1] or p)
        return found

    def _defined_where(self, path: str, text: str, name: str) -> Optional[Tuple[str, str]]:
        """The module that defines a name this module re-exports, through any chain of re-exports; None
        when no module of the project along it does (or the chain comes back on itself)."""
        seen = {path}
        resolved = self._reexported(path, text, name)
        while resolved is not None and resolved[0] not in seen:
            seen.add(resolved[0])
            where = self._text(resolved[0])
            if where is None:
                return None
            if _definition_block(where, resolved[1]) is not None:
                return resolved
            resolved = self._reexported(resolved[0], where, resolved[1])
        return None

    def _reexported(self, path: str, text: str, name: str) -> Optional[Tuple[str, str]]:
        """Where a name a module imports from the project is defined (`from .parallel import
        shard_model` in a package's `__init__.py`, or `from .parallel import *`)."""
        dotted = _imported_names(text).get(name)
        resolved = self.resolver.resolve(dotted, path) if dotted else None
        if resolved is None:
            starred = self._through_stars(path, name)
            resolved = starred if starred[0] != path else None
        return resolved if resolved is not None and resolved[1] and "." not in resolved[1] else None

    def _project_bases(self, path: str, text: str, class_block: str) -> List[Tuple[str, str]]:
        """(path, class) of each base of a class that is a class of this module or one its imports bring
        from the project."""
        header = _CLASS_HEADER.match(class_block)
        found = []
        for base in (_base_names(header.group(1)) if header else ()):
            base = base.strip()
            if not base or "=" in base or not _IDENTIFIER.fullmatch(base):
                continue
            if _definition_block(text, base) is not None:
                found.append((path, base))
            else:
                dotted = _imported_names(text).get(base)
                resolved = self.resolver.resolve(dotted, path) if dotted else None
                if resolved is not None and resolved[1] and "." not in resolved[1]:
                    found.append(resolved)
        return found

    def library_bases(self, dotted: str, importer: str) -> Tuple[str, ...]:
        """The library classes (by their full names) that the project class `dotted` (as named in
        `importer`: imported, or a class of `importer` itself) derives from, directly or through the
        project's own bases: `class DataParallelModel(DataParallel)` gives `torch.nn.DataParallel`."""
        if not dotted or _from_outside(dotted) or _outside_package(importer):
            return ()
        if "." not in dotted and self._class_block(importer, dotted) is not None:
            found: Optional[Tuple[str, str]] = (importer, dotted)
        else:
            found = self._resolve(dotted, importer)
        if found is None or not found[1] or "." in found[1]:
            return ()
        return tuple(self._library_bases(found[0], found[1], 0))

    def _library_bases(self, path: str, name: str, depth: int) -> List[str]:
        text = self._text(path) or ""
        block = self._class_block(path, name)
        if depth > 8:  # re-exports and bases together; a cycle of them ends here
            return []
        if block is None:  # a package re-exporting the class (`from .replicate import DataParallelWithCallback`)
            where = self._reexported(path, text, name)
            return self._library_bases(where[0], where[1], depth + 1) if where is not None else []
        self.consulted.add(path)
        found: List[str] = []
        imported = _imported_names(text)
        for base in _class_bases(block):
            head = base.split(".", 1)[0]
            if _definition_block(text, base) is not None:
                found += self._library_bases(path, base, depth + 1)
            elif head in imported:
                full = imported[head] + base[len(head):]
                if _from_outside(full):
                    found.append(full)
                else:
                    where = self._resolve(full, path)
                    if where is not None and where[1] and "." not in where[1]:
                        found += self._library_bases(where[0], where[1], depth + 1)
        return found

    def _hierarchy_methods(self, path: str, name: str) -> Set[str]:
        """Every method name the class or one of its project bases defines, at any depth: a method
        named nowhere in it has no block to judge, and asking each base for it in turn (a model file's
        every `self.m()` of every mixin of transformers' `PreTrainedModel`) was most of the project
        stage's cost. The modules read for it count for the current file as the answer does."""
        key = (path, name)
        known = self._hierarchies.get(key)
        if known is None:
            self._hierarchies[key] = (set(), {path})  # a cycle of bases sees what is known so far
            names, read = set(), {path}
            text = self._text(path) or ""
            block = self._class_block(path, name)
            if block is not None:
                names |= _defined_names(block)
                bases = self._project_bases(path, text, block)
            else:
                bases = [where for where in (self._reexported(path, text, name),) if where is not None]
            for where, inner in bases:
                inherited, modules = self._hierarchy_methods(where, inner)
                names |= inherited
                read |= modules
            known = self._hierarchies[key] = (names, read)
        self.consulted |= known[1]
        return known


def _object_calls(text: str, token: "re.Pattern[str]") -> Tuple[int, int]:
    """How many calls of a method the code makes through another object than its own, and through
    `self` or `super()`; comments and strings do not count."""
    from ..prefilter import code_only

    code = code_only(text)
    code = text if code is None else code
    own = [bool(_OWN_RECEIVER.fullmatch(code[max(0, match.start() - 16):match.start()].rstrip()[-8:]))
           for match in token.finditer(code)]
    return own.count(False), own.count(True)


# the receiver that ends where a method call's dot starts
_OWN_RECEIVER = re.compile(r"(?:.*\W)?(?:self|super\(\))", re.DOTALL)


def _text_halves(code: str, block: str, module_text: str, catalog: cat.Catalog, with_wraps: bool) -> Tuple[bool, bool]:
    from ..prefilter import token_halves

    return token_halves(code, catalog, with_wraps)


def _tree_halves(code: str, block: str, module_text: str, catalog: cat.Catalog, with_wraps: bool) -> Tuple[bool, bool]:
    """The text stage's halves of a block (`code`, its comments and strings blanked), kept only where
    the tree stage finds them too: the block as written (`block`: blanked, `x = "a"` or `{"k": v}` no
    longer parses, and the tree stage would give up) with its module's import lines, for the names it
    calls."""
    from ..prefilter import block_halves, token_halves

    h, p = token_halves(code, catalog, with_wraps)
    if not (h or p):
        return h, p
    tree = block_halves(_import_lines(module_text) + _at_margin(block), catalog, with_wraps)
    return (h, p) if tree is None else (h and tree[0], p and tree[1])


# The rest of a logical line: a backslash continues it (`from .samplers import A, \\` then `    B`).
_REST_OF_LINE = r"(?:[^\n\\]|\\[\s\S])*"
# Every import statement of a module, at any depth (`try: from apex import FusedAdam`), as the tree
# stage of a whole file reads them: the names a block calls are qualified through them.
_ANY_IMPORT = re.compile(r"\n[ \t]*((?:from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\([^)]*\)|" + _REST_OF_LINE
                         + r")|import[ \t]+" + _REST_OF_LINE + r"))")
_IMPORT_LINES: Dict[int, Tuple[str, str]] = {}


def _import_lines(text: str) -> str:
    cached = _IMPORT_LINES.get(id(text))
    if cached is None or cached[0] is not text:
        if len(_IMPORT_LINES) > 256:
            _IMPORT_LINES.clear()
        lines = "".join(f"try:\n {m.group(1)}\nexcept ImportError:\n pass\n" for m in _ANY_IMPORT.finditer("\n" + text))
        cached = _IMPORT_LINES[id(text)] = (text, lines)
    return cached[1]


def _at_margin(block: str) -> str:
    """A method's block, indented in its class, made a statement of its own (`if True:` above it)."""
    return block if block[:1] not in " \t" else "if True:\n" + block


# Each pattern starts with a literal (`.`, `self.`, `def`) and never backtracks inside a name: the
# plain spellings (`\w\.(\w+)\s*\(`) tried every position of every name and cost 5 ms a scan of a
# large module, asked thousands of times over transformers.
_KEEPS_ARGUMENT = re.compile(r"self\.\w+[ \t]*=[ \t]*[A-Za-z_]\w*[ \t]*(?:#[^\n]*)?\n")
_STAR_IMPORT = re.compile(r"^from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\*", re.MULTILINE)
_HANDS_TO_BASE = re.compile(r"super\((?<=\bsuper\()[^)]*\)\.__init__\(\s*[^)\s]")
_RETURNED_CALLEE = re.compile(r"return[ \t]+(?<=\breturn[ \t])([A-Za-z_][\w.]*)[ \t]*\(")
_RETURNED_NAME = re.compile(r"^[ \t]+return[ \t]+([A-Za-z_]\w*)[ \t]*(?:#[^\n]*)?$", re.MULTILINE)
_PARAMETER_NAME = re.compile(r"[(,]\s*\*{0,2}([A-Za-z_]\w*)")
_RETURNS = re.compile(r"^[ \t]+return[ \t]+\S", re.MULTILINE)
_PARAMETERS_CALL = re.compile(r"\.[ \t]*(?:%s)[ \t]*\(" % "|".join(sorted(cat.PARAMETER_METHODS)))
_CLASS_HEADER = re.compile(r"class[ \t]+\w+[ \t]*\(([^)]*)\)")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_SELF_CALL = re.compile(r"self\.(?<=\bself\.)([A-Za-z_]\w*+)\s*+\(")
_PLAIN_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")
_ATTRIBUTE_CALLS = re.compile(r"\.(?<=[\w)]\.)([A-Za-z_]\w*+)\s*+\(")
_SUPER_CALL = re.compile(r"super\(\)\.(?<=\bsuper\(\)\.)([A-Za-z_]\w*+)\s*+\(")
# A method of the bases run on this object: `super().__init__(...)`, `super(Agent, self).reset()`, or the
# base named (`DQN.__init__(self, config)`, a class by its spelling)
_BASE_CALL = re.compile(r"\bsuper\([^()]*\)\s*\.|\b[A-Z]\w*\s*\.\s*[A-Za-z_]\w*\s*\(\s*self\b")
_DEF_NAME = re.compile(r"def[ \t]++([A-Za-z_]\w*)")


def _defined_names(text: str) -> Set[str]:
    """The names of every `def` in the text, at any depth (a line holding `def name` after nothing but
    indentation or `async`)."""
    names = set()
    for match in _DEF_NAME.finditer(text):
        start = match.start()
        before = text[text.rfind("\n", 0, start) + 1:start]
        if not before.strip(" \t") or (before.strip(" \t") == "async" and before[-1:] in " \t"):
            names.add(match.group(1))
    return names


def _top_level_functions(text: str) -> Set[str]:
    """The functions defined at the margin, from the one scan `_definition_match` makes per text."""
    _definition_match(text, "")
    return {name for name, match in _DEFINITIONS[id(text)][1].items() if not match.group(0).startswith("class")}
# after a newline, as `_IMPORT` (the text is read with one put in front)
_CLASS_BASES = re.compile(r"\n[ \t]*class[ \t]+\w+[ \t]*\(([\w., \t]+)\)")


def _calls_through(text: str, names) -> Set[Tuple[str, Optional[str]]]:
    """(name, attribute or None) for each `name(` and `name.attribute(` in the text: a substring
    search per name (they occur a few times each), where a regular expression over every call of
    the file cost more than the rest of the check. `getattr(name, "attribute")(` is the second."""
    calls: Set[Tuple[str, Optional[str]]] = set()
    if "getattr(" in text:
        for match in _LITERAL_GETATTR.finditer(text):
            at, (owner, attribute) = match.start(), match.groups()
            if (owner in names and not (at and (text[at - 1].isalnum() or text[at - 1] in "_."))
                    and text[match.end():match.end() + 80].lstrip(" \t").startswith("(")):
                calls.add((owner, attribute))
    for name in names:
        at = text.find(name)
        while at != -1:
            before = text[at - 1] if at else " "
            end = at + len(name)
            if not (before.isalnum() or before in "_.") and not (end < len(text) and (text[end].isalnum() or text[end] == "_")):
                rest = text[end:end + 80].lstrip(" \t")
                if rest.startswith("("):
                    calls.add((name, None))
                elif rest.startswith("."):
                    match = _ATTRIBUTE_CALL.match(rest)
                    if match:
                        calls.add((name, match.group(1)))
            at = text.find(name, end)
    return calls


_ATTRIBUTE_CALL = re.compile(r"\.\s*([A-Za-z_]\w*)\s*\(")
_LITERAL_GETATTR = re.compile(r"getattr\(\s*([A-Za-z_][\w.]*)\s*,\s*[\'\"]([A-Za-z_]\w*)[\'\"]\s*\)")
_IMPORT_MODULE_CALL = re.compile(
    r"^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(?:importlib[ \t]*\.[ \t]*)?import_module\([ \t]*[\'\"]([A-Za-z_][\w.]*)[\'\"][ \t]*\)",
    re.MULTILINE)
# Builtins that return a plain value, never an object handed to them (`hasattr(torch, "mlu")`).
_VALUE_BUILTINS = frozenset({"abs", "all", "any", "bool", "callable", "chr", "float", "format", "hasattr", "hash",
                             "id", "int", "isinstance", "issubclass", "len", "ord", "print", "repr", "round", "str"})


def _outside_package(path: str) -> bool:
    """A file of a package the catalog describes (PyTorch's own sources checked as a tree): its
    imports lead into what the catalog already says, and are not followed. A `torch` package that is
    not PyTorch's (texar's namespace package `texar/torch/`) is the project's own."""
    from .modules import package_root

    root, name = package_root(path)
    top = name.split(".")[0]
    return top in _OUTSIDE and (top != cat.TORCH or _is_pytorch(root))


@lru_cache(maxsize=None)
def _is_pytorch(root: str) -> bool:
    return os.path.isfile(os.path.join(root, cat.TORCH, cat.TORCH_OWN_MODULE))


# Whole-module analyses kept between the callee that asked and the caller's own check: each holds its
# module's LibCST tree, so a few, not the tree's every caller.
_KEPT_ANALYSES = 16

_IMPORTED: Dict[int, Tuple[str, Dict[str, str]]] = {}


def _may_star_import(text: str) -> bool:
    """A substring test before `_STAR_IMPORT`'s scan of every line: few files import with a star."""
    at = text.find("import")
    while at != -1:
        if text[at + 6:at + 16].lstrip(" \t").startswith("*"):
            return True
        at = text.find("import", at + 6)
    return False


def _imported_names(text: str) -> Dict[str, str]:
    """Local name -> the dotted name it imports (`.utils.f`, `pkg.mod`), from the text's import lines
    (read once per text: the importer's calls, its bases and re-exports all ask)."""
    cached = _IMPORTED.get(id(text))
    if cached is None or cached[0] is not text:
        if len(_IMPORTED) > 1024:
            _IMPORTED.clear()
        cached = _IMPORTED[id(text)] = (text, _read_imports(text))
    return cached[1]


def _read_imports(text: str) -> Dict[str, str]:
    names: Dict[str, str] = {}
    if "import_module" in text:
        # `module = import_module("loss.adversarial")`: as `import loss.adversarial as module` (the
        # walker binds it where the assignment runs; here the last one in the text wins)
        names.update((local, module) for local, module in _IMPORT_MODULE_CALL.findall(text))
    for match in _IMPORT.finditer("\n" + text):
        module, listed, plain = match.groups()
        if plain is not None:
            for part in plain.split(","):
                pieces = part.split()
                if len(pieces) == 3 and pieces[1] == "as":
                    names[pieces[2]] = pieces[0]
                elif pieces:
                    names[pieces[0].split(".")[0]] = pieces[0].split(".")[0]
        elif module is not None:
            pieces = [p for p in re.split(r"[,\s\\()]+", listed or "") if p]
            index = 0
            while index < len(pieces):
                name = pieces[index]
                local = name
                if index + 2 < len(pieces) and pieces[index + 1] == "as":
                    local = pieces[index + 2]
                    index += 2
                index += 1
                if name.isidentifier() and name != "as":
                    names[local] = f"{module}.{name}" if module and not module.endswith(".") else module + name
    return names


_NOT_STARRED = BUILTIN_NAMES | frozenset(__import__("keyword").kwlist)
_METHOD = re.compile(r"^([ \t]+)(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
_METHODS: Dict[int, Tuple[str, Dict[str, Tuple[int, int]]]] = {}
_DECORATOR = re.compile(r"^([ \t]+)@[A-Za-z_]", re.MULTILINE)


def _method_block(block: str, method: str) -> str:
    """One method of a class's source (empty when the class does not define it itself); the class's
    methods are found in one scan of its source, however many are asked for."""
    cached = _METHODS.get(id(block))
    if cached is None or cached[0] is not block:
        spans: Dict[str, Tuple[int, int]] = {}
        matches = list(_METHOD.finditer(block))
        indent = min((len(m.group(1)) for m in matches), default=0)
        own = [m for m in matches if len(m.group(1)) == indent]  # the class's methods, not nested functions
        # A decorator at the methods' own indentation is a statement of the class: the method above it
        # has ended (it decorates the next one, whose block it is; left in, the block does not parse)
        decorators = [m.start() for m in _DECORATOR.finditer(block) if len(m.group(1)) == indent] if own else []
        for current, following in zip(own, own[1:] + [None]):
            end = following.start() if following else len(block)
            cut = bisect.bisect_right(decorators, current.start())
            if cut < len(decorators) and decorators[cut] < end:
                end = decorators[cut]
            spans.setdefault(current.group(2), (current.start(), end))
        if len(_METHODS) > 256:
            _METHODS.clear()
        cached = _METHODS[id(block)] = (block, spans)
    span = cached[1].get(method)
    return block[span[0]:span[1]] if span else ""


_BLOCKS: Dict[Tuple[int, str], Tuple[str, Optional[str]]] = {}


def _definition_block(text: str, name: str) -> Optional[str]:
    """The source of `def name` or `class name` at the margin, up to the next line at the margin (the
    same string object each time it is asked: `_method_block` indexes it once)."""
    cached = _BLOCKS.get((id(text), name))
    if cached is None or cached[0] is not text:
        if len(_BLOCKS) > 4096:
            _BLOCKS.clear()
        cached = _BLOCKS[(id(text), name)] = (text, _find_block(text, name))
    return cached[1]


def _find_block(text: str, name: str) -> Optional[str]:
    match = _definition_match(text, name)
    if match is None:
        return None
    end = re.compile(r"^(?=[^\s#)\]}])", re.MULTILINE)
    following = end.search(text, match.end())
    return text[match.start(): following.start() if following else len(text)]


# Packages the catalog describes: their names are never looked up as project code, even when the
# checked tree is that package's own source.
_OUTSIDE = frozenset({"torch", "typing", "os", "sys", "re", "math", "collections", "functools", "itertools"})


def _from_outside(dotted: str) -> bool:
    """Whether a dotted name (as imported: `torch.optim.AdamW`, `.utils.f`) leads outside the project,
    into what the catalog describes (a relative name never does)."""
    return dotted.split(".", 1)[0] in _OUTSIDE


def _base_names(listed: str) -> List[str]:
    """The entries of a class header's base list, a generic base's arguments left out
    (`Observation[TExp, TIn], Base` -> `["Observation", " Base"]`)."""
    while "[" in listed:
        shorter = _SUBSCRIPT.sub("", listed)
        if shorter == listed:
            break
        listed = shorter
    return listed.split(",")


_SUBSCRIPT = re.compile(r"\[[^\[\]]*\]")


def _class_bases(block: str) -> Tuple[str, ...]:
    """The bases a class's header names, as written (`("BaseModel",)`; `()` for `class C:`)."""
    header = _CLASS_HEADER.match(block)
    return tuple(base.strip() for base in _base_names(header.group(1)) if base.strip()) if header else ()


def _excerpt(text: str, name: str):
    """(program text, its line -> the module's line): the import lines, the definition of `name`, and
    the module's other definitions it names, transitively; None when `name` is not defined there
    (then it may be imported: `get` follows the import)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def line_of(offset: int) -> int:
        import bisect

        return bisect.bisect_right(starts, offset)  # 1-based

    pieces = []  # (first line, text)
    todo, seen = [name], set()
    while todo and len(seen) < 12:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        match = _definition_match(text, current)
        if match is None:
            continue
        block = _definition_block(text, current)
        decorators = _decorators_above(text, match.start())
        start = match.start() - len(decorators)
        pieces.append((line_of(start), decorators + block.rstrip("\n") + "\n"))
        named = sorted(set(re.findall(r"(?<![\w.])([A-Za-z_]\w*)\s*\(", block)))
        header = _CLASS_HEADER.match(block)
        if header is not None:
            # its bases of this module, taken first (the cap on definitions): what it inherits is theirs
            named += [base.strip() for base in reversed(_base_names(header.group(1))) if _IDENTIFIER.fullmatch(base.strip())]
        for called in named:
            if called not in seen:
                todo.append(called)
    # The import statements that bind a name the definitions read (a module of thousands of lines
    # imports hundreds of names, and each excerpt is parsed on its own); without the definition, those
    # of the name alone: `get` may follow a re-export.
    used = set(_WORD.findall("".join(piece for _, piece in pieces))) | {name}
    pieces += [(first, statement) for first, statement, bound in _import_pieces(text, line_of)
               if bound is None or not bound.isdisjoint(used)]
    pieces.sort()
    source, line_map = [], {}
    for first, piece in pieces:
        for offset, line in enumerate(piece.splitlines(keepends=True)):
            source.append(line)
            line_map[len(source)] = first + offset
    return "".join(source), line_map


# At any depth, as `_ANY_IMPORT`: `if _TORCH_AVAILABLE:` above `from torch.nn.parallel import ...` must
# not leave the excerpt's calls unqualified; each is taken to the margin.
_IMPORT_STATEMENT = re.compile(r"^[ \t]*((?:from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\([^)]*\)|" + _REST_OF_LINE
                               + r")|import[ \t]+" + _REST_OF_LINE + r"))\n?", re.MULTILINE)


_WORD = re.compile(r"[A-Za-z_]\w*")
_IMPORT_PIECES: Dict[int, Tuple[str, list]] = {}


def _import_pieces(text: str, line_of) -> List[Tuple[int, str, Optional[FrozenSet[str]]]]:
    """(first line, statement, the names it binds; None for a star or `__future__` import) of every
    import statement of a text at any depth, read once per text."""
    cached = _IMPORT_PIECES.get(id(text))
    if cached is None or cached[0] is not text:
        found = []
        for match in _IMPORT_STATEMENT.finditer(text):
            statement = match.group(1)
            if match.group(0)[:1] in " \t" and not _parses(statement):
                continue  # an indented line of a docstring's prose ("    import the data...")
            starred = "*" in statement or statement.startswith("from __future__")
            found.append((line_of(match.start()), statement + "\n",
                          None if starred else frozenset(_read_imports(statement))))
        if len(_IMPORT_PIECES) > 256:
            _IMPORT_PIECES.clear()
        cached = _IMPORT_PIECES[id(text)] = (text, found)
    return cached[1]


def _parses(statement: str) -> bool:
    try:
        ast.parse(statement)
    except (SyntaxError, ValueError):
        return False
    return True


_DEFINITION = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
_DEFINITIONS: Dict[int, Tuple[str, Dict[str, "re.Match[str]"]]] = {}


def _definition_match(text: str, name: str):
    """The first top-level `def name`/`class name` of the text, from one scan of the text per text."""
    cached = _DEFINITIONS.get(id(text))
    if cached is None or cached[0] is not text:
        table: Dict[str, "re.Match[str]"] = {}
        for match in _DEFINITION.finditer(text):
            table.setdefault(match.group(1), match)
        if len(_DEFINITIONS) > 256:
            _DEFINITIONS.clear()
        cached = _DEFINITIONS[id(text)] = (text, table)
    return cached[1].get(name)


def _decorators_above(text: str, start: int) -> str:
    """The decorator lines right above a definition (they run where it is defined)."""
    lines = text[:start].splitlines(keepends=True)
    taken = []
    while lines and lines[-1].startswith("@"):
        taken.insert(0, lines.pop())
    return "".join(taken)


def _locator(path: str, module, line_map):
    positions = []

    def locate(node) -> Tuple[str, int, int]:
        if not positions:
            from ..analysis.positions import Positions

            positions.append(Positions(module))
        try:
            where = positions[0][node]
        except KeyError:
            return path, 1, 0
        return path, line_map.get(where.start.line, 1), where.start.column

    return locate


# Where callers are not looked for, and how large a tree is searched for them at all.
_NOT_SOURCE_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist", "venv", "env"})
_MAX_TREE_FILES = 5000

_INDEXES: Dict[Tuple[Tuple[str, ...], int], ProjectIndex] = {}


def forget() -> None:
    """Drop this process's indexes: a new run reads the files as they are now (worker processes of a
    run start empty; this is for a run made inside a process that made one before)."""
    _INDEXES.clear()


def index_for(roots: Tuple[str, ...], catalog: cat.Catalog) -> ProjectIndex:
    """One index per process and project: a pool worker reuses the modules it already summarised."""
    key = (tuple(os.path.abspath(r) for r in roots), id(catalog))
    if key not in _INDEXES:
        _INDEXES.clear()
        _INDEXES[key] = ProjectIndex(roots, catalog)
    return _INDEXES[key]
