"""Which files cannot produce a finding, decided without LibCST: the check every file goes through.

Three stages, cheapest first, each sound (a file it rejects has no finding for the rules selected):

1. **text**: the catalog's holder and placement tokens anywhere in the text (substring scans and a
   few regular expressions; whitespace, continuations and comments may sit between tokens). It
   rejects about nine files in ten of PyTorch's own sources.
2. **code**: the same test on the text with comments and plain string literals blanked by a small
   self-checking lexer (`code_only`): docstrings are where most library files mention optimizers.
3. **tree**: the same questions asked of a stdlib `ast` tree, each token where the engine would act
   on it: a placement method as the method of a call, a holder as the name a call is made through
   (after resolving import aliases, as the engine does), `assign=` as a keyword, `x.attr = nn.X(...)`
   as an assignment. The flake8 plugin passes the tree flake8 already built; the CLI builds one only
   for the files that got this far (`ast.parse` costs a fraction of a LibCST parse).

Why these conditions suffice: every finding comes from a placement event (a method placement call, a
cataloged placement call, `copy.deepcopy`, an unpickling call (`torch.load`), a
`load_state_dict(..., assign=True)`, a submodule reassigned with a torch.nn class, or a helper's
replay of one of these, which is in the same file)
and, except the sync-wrapper rules, a holder event (a call of a cataloged holder, or of a name that
reads like an optimizer factory). `tests/test_prefilter.py`, the fixtures and the hypothesis programs
check each stage on every source with a finding.
"""
from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import Dict, Iterable, List, Optional, Set, Tuple

from . import catalog as cat
from .syntax import BUILTIN_NAMES, STANDARD_LIBRARY, python_tree, walk as _walk


@lru_cache(maxsize=16)
def _text_spec(catalog: cat.Catalog, with_wraps: bool):
    spec = catalog.prefilter(with_wraps)
    placements = [re.compile(p) for p in spec.placement_patterns]
    words = _any_of(spec.holder_words + spec.wrapper_words)
    unpickling = [re.compile(p) for p in spec.unpickling_patterns]
    # the placement words are fewer and longer: a substring test per word beats one alternation over
    # them (0.22 s against 0.37 s for 19 words over transformers' 1,634 files), unlike the holder words
    return placements, re.compile(spec.holder_pattern), words, tuple(sorted(set(spec.placement_words))), unpickling


def _any_of(words: Iterable[str]) -> "re.Pattern[str]":
    """One scan for any of the words: 3x faster than a substring test per word on PyTorch's files
    (0.12 s against 0.39 s for the 18 holder names over 2,328 files)."""
    ordered = sorted(set(words), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, ordered)) if ordered else r"(?!)")


def text_could_match(text: str, catalog: cat.Catalog = cat.DEFAULT_CATALOG, with_wraps: bool = True) -> bool:
    """Every finding needs a holder or sync-wrapper token and a placement token somewhere in the text.

    `with_wraps=False` when no canonical-order (info) rule is selected: those wrappers then cannot
    lead to a finding, and they are everywhere in PyTorch code (`torch.compile`, `jit.script`).
    """
    # holders first: most files have none, and a literal scan for them is the cheapest test here
    return _has_holder(text, catalog, with_wraps) and _has_placement(text, catalog, with_wraps)


def token_halves(text: str, catalog: cat.Catalog = cat.DEFAULT_CATALOG, with_wraps: bool = True,
                 unpickling: bool = True) -> Tuple[bool, bool]:
    """The text stage's two questions apart: (a holder or sync-wrapper token, a placement token). The
    project index asks them of the modules a file imports, which may supply the half it lacks."""
    return _has_holder(text, catalog, with_wraps), _has_placement(text, catalog, with_wraps, unpickling)


def _has_holder(text: str, catalog: cat.Catalog, with_wraps: bool) -> bool:
    def ask() -> bool:
        _, holder, holder_or_wrapper_word, _, _ = _text_spec(catalog, with_wraps)
        return bool(
            # the generic name ignores case; `lower()` only for the rare text that spells it in mixed case
            (("ptim" in text or "PTIM" in text or "ptim" in text.lower()) and holder.search(text))
            or holder_or_wrapper_word.search(text)
            or _used_as_optimizer(text)
            or _short_name_handed_parameters(text)
        )

    return _remembered(text, ("holder", id(catalog), with_wraps), ask)


def _has_placement(text: str, catalog: cat.Catalog, with_wraps: bool, unpickling: bool = True) -> bool:
    """`unpickling=False`: a placement token other than an unpickling call's (the project stage's own half)."""
    def ask() -> bool:
        placements, _, _, placement_words, _ = _text_spec(catalog, with_wraps)
        return any(word in text for word in placement_words) or any(p.search(text) for p in placements)

    def ask_unpickling() -> bool:
        return any(p.search(text) for p in _text_spec(catalog, with_wraps)[4])

    return (_remembered(text, ("placement", id(catalog), with_wraps), ask)
            or (unpickling and _remembered(text, ("unpickling", id(catalog), with_wraps), ask_unpickling)))


# What the stages found in the last few texts: a file the plain stages reject goes on to the project
# stage, which asks the same questions of the same text (its code-only text, its halves, its tree).
_ANSWERS: Dict[int, Tuple[str, Dict[tuple, object]]] = {}


def _remembered(text: str, question: tuple, ask):
    entry = _ANSWERS.get(id(text))
    if entry is None or entry[0] is not text:
        if len(_ANSWERS) > 8:
            _ANSWERS.clear()
        entry = _ANSWERS[id(text)] = (text, {})
    answers = entry[1]
    if question not in answers:
        answers[question] = ask()
    return answers[question]


def _code_of(text: str) -> Optional[str]:
    return _remembered(text, ("code",), lambda: code_only(text))


def _tree_of(text: str) -> Optional[ast.AST]:
    return _remembered(text, ("tree",), lambda: parse_quietly(text, keep=True))


def _used_as_optimizer(text: str) -> bool:
    """Uses only an optimizer has (analysis/uses.py): `updater.zero_grad()` with `updater.step()`,
    `add_param_group`, `param_groups`, a gradient scaler's `step(updater)`; an optimizer known from its
    use, whatever its name (the tree stage asks the methods of one receiver)."""
    return (all(method in text for method in cat.OPTIMIZER_METHODS_TOGETHER)
            or any(method in text for method in cat.OPTIMIZER_ONLY_METHODS | cat.OPTIMIZER_USE_ATTRIBUTES)
            or any(_SCALER.search(_receiver_before(text, m.start())) for m in _STEP_WITH_ARGUMENT.finditer(text)))


_SCALER = re.compile(cat.SCALER_RECEIVER)
# `self.actor_opt = actor_opt_fn(self.actor_params)`: an optimizer's short name bound to a call handed
# parameters first (the tree stage asks it of the syntax, walker._built_by_use of the values). Literal
# first, so the scan skips to each `opt`; the letter before it is read back from there (a lookbehind in
# front cost 0.4 s over transformers' files, this 0.03 s).
_SHORT_NAME_HANDED_PARAMETERS = re.compile(r"opts?[ \t]*=[ \t]*[\w.]+\([ \t]*[\w.]*param")


def _short_name_handed_parameters(text: str) -> bool:
    if "param" not in text:
        return False
    for match in _SHORT_NAME_HANDED_PARAMETERS.finditer(text):
        before = text[match.start() - 1] if match.start() else " "
        if not (before.isascii() and before.isalnum()):  # `actor_opt`, `opt`; not `adopt`
            return True
    return False


# `.step(x`: a call of a `step` method with an argument (a scaler's `step(optimizer)`); literal first,
# so the scan skips to each `.step` (the receiver's name is read back from there)
_STEP_WITH_ARGUMENT = re.compile(r"\.[ \t]*step[ \t]*\([ \t]*[A-Za-z_]")


def _receiver_before(text: str, end: int) -> str:
    """The name that ends where a method call's dot starts (`scaler` of `scaler.step(`)."""
    start = end
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    return text[start:end]


# A string literal, f-strings apart: their replacement fields are code.
_STRING_BODY = (
    r'(?:"""[\s\S]*?"""'
    r"|'''[\s\S]*?'''"
    r'|"(?:\\[\s\S]|[^"\\\n])*"'
    r"|'(?:\\[\s\S]|[^'\\\n])*')"
)
_F_PREFIX = r"(?<!\w)(?:[rRbBuU]?[fF]|[fF][rRbB])"
_LEXEME = re.compile(
    r"""(?=[rRbBuUfF"'#])"""  # every lexeme starts with one of these: lets the scan skip the rest fast
    r"(?:(?P<fstring>" + _F_PREFIX + _STRING_BODY + ")"
    r"|(?P<unsure>" + _F_PREFIX + r"""["'])"""  # an f-string that the 3.11 grammar cannot end
    r"|#[^\n]*"
    r"|(?:(?<!\w)[rRbBuU]{1,2})?" + _STRING_BODY
    + r"""|(?P<stray>["']))"""  # a quote that starts no string: not text this lexer understands
)


def code_only(text: str) -> Optional[str]:
    """The text with comments and plain string literals blanked, or None when unsure of the lexing.

    Docstrings and comments are where most PyTorch files mention optimizers and `.to(...)`. The lexer
    is one left-to-right regular expression, which finds the comments and strings of valid code
    exactly, except f-strings that nest their own quotes (Python 3.12): an f-string whose replacement
    field is left open, an f-string that does not end on its line, or any quote that starts no string
    makes it give up, and the caller goes on to the exact syntax stage.
    """
    unsure = False

    def blank(match: "re.Match[str]") -> str:
        nonlocal unsure
        if match.lastgroup == "fstring":
            body = match.group(0).replace("{{", "").replace("}}", "")
            if body.count("{") > body.count("}"):
                unsure = True
            return match.group(0)
        if match.lastgroup is not None:
            unsure = True
        return " "

    result = _LEXEME.sub(blank, text)
    return None if unsure else result


def tree_could_match(tree: ast.AST, catalog: cat.Catalog = cat.DEFAULT_CATALOG, with_wraps: bool = True,
                     external: Optional[Dict[str, Tuple[bool, bool]]] = None) -> bool:
    """The syntax stage on a stdlib `ast` tree (see the module docstring for why it is sound).

    The engine analyses each module-level function, each class (its methods together) and the
    module's own statements as separate scopes, which meet only through calls of module-level
    functions (helper summaries). So the holder and the placement must both be reachable from one
    such unit: the unit itself plus the module-level functions it names, transitively.
    """
    methods = _method_placements(with_wraps)
    aliases: Dict[str, Set[str]] = {}
    module_unit = _Unit(tree, _DEFINITIONS)
    units = [module_unit]
    helpers: Dict[str, List[_Unit]] = {}
    tables: Dict[str, Set[str]] = {}  # `PLACERS = {"gpu": GpuPlacer}`: a name for the definitions it holds
    classes: Dict[str, _Unit] = {}  # `OPTIMIZERS = {"adam": optim.Adam}`: what a table names, as a unit
    # The module's own statements, not descending into definitions: each of those is a unit.
    for node in _walk(tree, stop=_DEFINITIONS):
        kind = type(node)
        if kind is ast.Assign:
            named = {n.id for n in _walk(node.value) if type(n) is ast.Name}
            for target in node.targets:
                if type(target) is ast.Name:
                    tables.setdefault(target.id, set()).update(named)
                    table = classes.setdefault(target.id, _Unit())
                    for inner in _walk(node.value):
                        if type(inner) in (ast.Name, ast.Attribute):
                            _observe(inner, table, methods, aliases)
        if kind in _DEFINITIONS:
            unit = _Unit(node)
            units.append(unit)
            if kind is ast.ClassDef:
                # building the class calls its bases' constructors: a subclass of a wrapper wraps
                unit.called.extend(filter(None, map(_dotted, node.bases)))
            helpers.setdefault(node.name, []).append(unit)  # a class is joined through calls of its name
            for inner in _walk(node):
                if type(inner) in _OBSERVED:
                    _observe(inner, unit, methods, aliases)
        elif kind in _OBSERVED:
            _observe(node, module_unit, methods, aliases)
    for unit in units:
        unit.decide(catalog, with_wraps, aliases)
    for name, table in classes.items():
        table.decide(catalog, with_wraps, aliases)
        if table.holder:
            # a unit that reads the table may call an optimizer class it holds
            unit = _Unit()
            unit.holder = True
            helpers.setdefault(name, []).append(unit)
    for table, named in tables.items():
        # the engine calls what a module-level table holds when a unit calls through it
        joined = [callee for name in named if name != table for callee in helpers.get(name, ())]
        if joined:
            helpers.setdefault(table, []).extend(joined)
    for unit in units:
        holder, placement, seen, todo = False, False, {id(unit)}, [unit]
        unpickles = takes_entry = False
        called_holders: Set[str] = set()
        called_placements: Set[str] = set()
        while todo:
            current = todo.pop()
            holder = holder or current.holder
            # `trainer.load_state_dict(torch.load(path))` here, `self.x = state_dict["x"]` in the method
            unpickles, takes_entry = unpickles or current.unpickles, takes_entry or current.takes_entry
            placement = placement or current.placement or (unpickles and takes_entry)
            for name in current.names & external.keys() if external else ():
                # a function or class of another project module this unit calls (see project_could_match)
                if external[name][0]:
                    called_holders.add(name)
                if external[name][1]:
                    called_placements.add(name)
            if _meet(holder, placement, called_holders, called_placements):
                return True
            for name in current.names & helpers.keys():
                for callee in helpers[name]:
                    if id(callee) not in seen:
                        seen.add(id(callee))
                        todo.append(callee)
    return False


_OBSERVED = frozenset({ast.Name, ast.Attribute, ast.Call, ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.arg})
_DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
class _Unit:
    """What one analysis unit contains, gathered in one pass and decided once imports are known."""

    __slots__ = ("placement", "holder", "called", "assigned", "names", "arguments", "named", "uses_param_groups",
                 "handed_parameters", "hands_optimizer", "unpickled", "root", "stop", "unpickles", "takes_entry",
                 "optimizer_entries", "handed_first")

    def __init__(self, root: Optional[ast.AST] = None, stop: frozenset = frozenset()) -> None:
        self.root, self.stop = root, stop  # the unit's nodes: `_walk(root, stop)`
        self.placement = False
        self.holder = False
        self.uses_param_groups = False  # reads or writes `x.param_groups`: x is an optimizer
        # a call that names nothing known is handed the parameters first (walker._built_by_use), and
        # something is handed on as `optimizer=`: with a use only an optimizer has, that call builds one
        self.handed_parameters = False
        self.hands_optimizer = False
        self.called: List[str] = []
        self.arguments: List[str] = []  # dotted names handed to calls: `cfg.optimizer`, `torch.optim.AdamW`
        self.named: List[str] = []  # dotted names of classes read as values: `optim.AdamW` in `cls = optim.AdamW`
        self.assigned: List[str] = []  # what `x.attr = Call(...)` calls: a submodule replaced with a torch.nn class
        self.names: Set[str] = set()
        # `x = torch.load(...)`-like calls whose result is bound: (callee, the name bound or None for an
        # attribute or `setattr`, where)
        self.unpickled: List[Tuple[str, Optional[str], Tuple[int, int]]] = []
        # An unpickling call of any kind, and a name or attribute bound to an entry of something
        # (`self.log_alpha = state["log_alpha"]`): together, an entry of an unpickled object may rebind
        # what an optimizer holds, here or in a method this unit hands the unpickled object (analysis 1n)
        self.unpickles = False
        self.takes_entry = False
        # names bound to a config's entry for the optimizer (`op_cfg = cfg.get("optimizer")`), and the
        # names handed first to a call: a factory handed such an entry builds one (walker._builds_from_config)
        self.optimizer_entries: Set[str] = set()
        self.handed_first: Set[str] = set()

    def _seen_before(self, name: str, where: Tuple[int, int]) -> bool:
        """Whether `name` appears in the unit (read, bound, a parameter) before `where`. Asked only of
        a name an unpickling call is bound to, so the unit is walked again rather than every name's
        place kept while the stage collects."""
        if self.root is None:
            return True  # nothing to look in: counted, as looser is sound
        return any((type(node) is ast.Name and node.id == name or type(node) is ast.arg and node.arg == name)
                   and (node.lineno, node.col_offset) < where for node in _walk(self.root, self.stop))

    def decide(self, catalog: cat.Catalog, with_wraps: bool, aliases: Dict[str, Set[str]]) -> None:
        self.unpickles = self.unpickles and any(
            q in cat.UNPICKLING_CALLS for callee in self.called if callee.rsplit(".", 1)[-1] in _UNPICKLING_FUNCTIONS
            for q in _qualified(callee, aliases))
        self.placement = self.placement or (self.unpickles and self.takes_entry)
        for callee, name, where in self.unpickled:
            # a name rebound to an unpickled object replaces what it held: only a name seen before can
            # have held a module (`checkpoint = torch.load(path)` names a new object, no placement)
            if not self.placement and any(q in cat.UNPICKLING_CALLS for q in _qualified(callee, aliases)):
                self.placement = name is None or self._seen_before(name, where)
        # `model.fc = nn.Linear(...)`, and any class call bound to an attribute: in place of a module an
        # optimizer holds, its object is a new module (analysis/bindings.py, `_fresh_object`)
        self.placement = self.placement or any(_may_make_a_module(callee, catalog, aliases) for callee in self.assigned)
        for dotted in set(self.arguments):
            if self.holder:
                break
            if any(catalog.holder_kind(q) is not None or cat.is_optimizer_module(q) for q in _qualified(dotted, aliases)):
                self.holder = True
        # classes named as values (`opt_cls = AdamW if args.adamw else SGD`), imported names read
        for dotted in () if self.holder else set(self.named) | (self.names & aliases.keys()):
            if any(q in catalog.holders for q in _qualified(dotted, aliases)):
                self.holder = True
                break
        self.holder = self.holder or bool(self.optimizer_entries & self.handed_first)
        if not self.holder:
            receivers = [{d.rsplit(".", 1)[0] for d in self.called if d.endswith("." + method)}
                         for method in cat.OPTIMIZER_METHODS_TOGETHER]
            self.holder = bool(set.intersection(*receivers)) or any(
                d.rsplit(".", 1)[-1] in cat.OPTIMIZER_ONLY_METHODS
                or (d.endswith(".step") and _SCALER.search(d.rsplit(".", 2)[-2]) is not None)
                for d in self.called if "." in d) or self.uses_param_groups
            self.holder = self.holder or (self.handed_parameters and self.hands_optimizer)
        for dotted in set(self.called):
            if self.holder and self.placement:
                return
            if not self.holder and cat.is_generic_holder_name(dotted.rsplit(".", 1)[-1]):
                self.holder = True
            if dotted.startswith("self.") and dotted[5:] in catalog.base_method_names:
                self.placement = True  # a framework base class's method (the engine checks the base)
            for qualified in _qualified(dotted, aliases):
                if not self.holder and (catalog.holder_kind(qualified) is not None or qualified in catalog.holders):
                    self.holder = True
                if qualified in cat.DEVICE_KEYWORD_MOVES:
                    self.placement = True
                found = catalog.call_placement(qualified)
                if found is not None:
                    if found.sync_wrapper:
                        self.holder = True  # convert-after-wrap and discarded-wrapper need no optimizer
                    if cat.counts_for_prefilter(found, with_wraps):
                        self.placement = True
                elif qualified.rsplit(".", 1)[-1] == "deepcopy":
                    self.placement = True


def _observe(node: ast.AST, unit: _Unit, methods: frozenset, aliases: Dict[str, Set[str]]) -> None:
    kind = type(node)
    if kind is ast.Name:
        unit.names.add(node.id)
    elif kind is ast.Attribute:
        if node.attr in cat.OPTIMIZER_USE_ATTRIBUTES:
            unit.uses_param_groups = True
        elif node.attr[:1].isupper() and not unit.holder:
            # a class named, not called (`AdamW if args.adamw else SGD`): the engine calls the value later
            name = _dotted(node)
            if name is not None:
                unit.named.append(name)
    elif kind is ast.Call:
        func = node.func
        if not unit.placement:
            if type(func) is ast.Attribute and func.attr in methods:
                unit.placement = True
            elif any(keyword.arg in _REPLACING_KEYWORDS for keyword in node.keywords):
                unit.placement = True
        dotted = _dotted(func)
        if dotted is not None:
            unit.called.append(dotted)
            if not unit.unpickles and dotted.rsplit(".", 1)[-1] in _UNPICKLING_FUNCTIONS:
                unit.unpickles = True  # qualified in `_Unit.decide`, once the imports are known
        elif type(func) is ast.Subscript:
            table = _dotted(func.value)
            if table is not None and table.endswith(".__dict__"):
                unit.arguments.append(table[: -len(".__dict__")])  # `torch.optim.__dict__[name](...)`
        if dotted == "setattr" and len(node.args) == 3 and type(node.args[2]) is ast.Call:
            _note_unpickled(unit, node.args[2], (node.args[0],), attribute=True)  # `setattr(self, name, torch.load(p))`
        if node.args and not unit.handed_parameters and _hands_parameters(node.args[0]) and dotted not in BUILTIN_NAMES:
            unit.handed_parameters = True
        if not unit.holder and node.args and type(node.args[0]) is ast.Name:
            unit.handed_first.add(node.args[0].id)
        if not unit.hands_optimizer and any(k.arg is not None and _OPTIMIZER_KEYWORD.match(k.arg) for k in node.keywords):
            unit.hands_optimizer = True
        if not unit.holder and node.args:
            # A config factory (`instantiate(cfg.optimizer)`, `config.init_obj("optimizer", ...)`) or an
            # optimizer class handed on (`partial(torch.optim.AdamW)`, `getattr(torch.optim, name)`),
            # as the engine tells them: by a positional argument. Cheap tests first: this runs per call.
            handing = dotted in cat.CLASS_HANDING_CALLS
            for arg in node.args:
                kind = type(arg)
                if kind is ast.Attribute:
                    if handing or "ptim" in arg.attr.lower():
                        name = _dotted(arg)
                        if name is not None and cat.config_entry_names_optimizer(name):
                            unit.holder = True
                        elif name is not None and handing:
                            unit.arguments.append(name)
                elif kind is ast.Constant and type(arg.value) is str and dotted is not None and "." in dotted:
                    if cat.is_config_root(dotted.split(".", 1)[0]) and cat.names_optimizer(arg.value):
                        unit.holder = True
    elif kind is ast.arg:
        # a parameter that receives an optimizer built by the caller: the callee side's holder (a
        # string default, which the engine reads as a setting, still counts: looser is sound)
        if not unit.holder and cat.receives_optimizer(node.arg, ast.unparse(node.annotation) if node.annotation else ""):
            unit.holder = True
    elif kind is ast.Assign or kind is ast.AnnAssign:
        value = node.value
        targets = node.targets if kind is ast.Assign else (node.target,)
        if type(value) is ast.Call and any(type(t) is ast.Attribute for t in targets):
            callee = _dotted(value.func)
            if callee is not None:
                unit.assigned.append(callee)
        if not unit.holder and _reads_optimizer_entry(value):
            unit.optimizer_entries.update(t.id for t in targets if type(t) is ast.Name)
        if type(value) is ast.Call:
            _note_unpickled(unit, value, targets)
            if not unit.holder and value.args and _hands_parameters(value.args[0]) and any(
                    cat.abbreviates_optimizer((_dotted(t) or "").rsplit(".", 1)[-1]) for t in targets):
                unit.holder = True  # `self.actor_opt = actor_opt_fn(self.actor_params)` (walker._built_by_use)
        elif type(value) is ast.Subscript:
            unit.takes_entry = True
    elif kind is ast.Import:
        for alias in node.names:
            if alias.asname:
                aliases.setdefault(alias.asname, set()).add(alias.name)
            else:
                root = alias.name.split(".", 1)[0]
                aliases.setdefault(root, set()).add(root)
    elif kind is ast.ImportFrom:
        module = node.module or ""
        for alias in node.names:
            full = f"{module}.{alias.name}" if module else alias.name
            aliases.setdefault(alias.asname or alias.name, set()).add(full)


_UNPICKLING_FUNCTIONS = frozenset(name.rsplit(".", 1)[-1] for name in cat.UNPICKLING_CALLS)


def _may_make_a_module(callee: str, catalog: cat.Catalog, aliases: Dict[str, Set[str]]) -> bool:
    """A class call bound to an attribute whose object may be a module (analysis/bindings.py,
    `_made_by_class`): a capitalised name that is neither a holder of the catalog nor a class of the
    standard library (`cfg.model = Namespace(**vars(args))`), as one of its spellings may mean."""
    spellings = list(_qualified(callee, aliases))[1:] or [callee]  # as its imports make it, else as written
    return callee.rsplit(".", 1)[-1][:1].isupper() and any(
        catalog.holder_kind(q) is None and q.split(".", 1)[0] not in STANDARD_LIBRARY for q in spellings)


def _reads_optimizer_entry(value: ast.AST) -> bool:
    """`cfg.get("optimizer", default)` or `cfg["optimizer"]` (as the walker's bindings read it)."""
    if type(value) is ast.Call and type(value.func) is ast.Attribute and value.func.attr == "get" and value.args:
        entry = value.args[0]
    elif type(value) is ast.Subscript:
        entry = value.slice
    else:
        return False
    return type(entry) is ast.Constant and type(entry.value) is str and cat.names_optimizer(entry.value)


def _note_unpickled(unit: _Unit, value: ast.Call, targets, attribute: bool = False) -> None:
    """`model = torch.load(path)`, `self.actor = torch.load(path)` or `setattr(self, name, torch.load(path))`
    (`attribute`): a bound result of a call that may unpickle (decided with the imports, in `_Unit.decide`)."""
    callee = _dotted(value.func)
    if callee is None or callee.rsplit(".", 1)[-1] not in _UNPICKLING_FUNCTIONS:
        return
    for target in targets:
        where = (target.lineno, target.col_offset)
        if type(target) is ast.Name and not attribute:
            unit.unpickled.append((callee, target.id, where))
        elif type(target) is ast.Attribute or attribute:
            unit.unpickled.append((callee, None, where))
_OPTIMIZER_KEYWORD = re.compile(cat.OPTIMIZER_KEYWORD)


def _hands_parameters(arg: ast.AST) -> bool:
    if type(arg) is ast.BinOp and type(arg.op) is ast.Add:  # `self.actor_params + self.phi_params`
        return _hands_parameters(arg.left) and _hands_parameters(arg.right)
    if type(arg) is ast.Call:
        return type(arg.func) is ast.Attribute and cat.hands_parameters(arg.func.attr, None)
    return cat.hands_parameters(None, _dotted(arg))


def block_halves(source: str, catalog: cat.Catalog = cat.DEFAULT_CATALOG,
                 with_wraps: bool = True) -> Optional[Tuple[bool, bool]]:
    """The tree stage's two questions of one definition of another module (its import lines and its
    block), as one unit: (a holder, a placement) anywhere in it; None when it does not parse. The
    project stage asks it of the definitions a file calls, after their text said a half."""
    tree = parse_quietly(source)
    if tree is None:
        return None
    unit, aliases, methods = _Unit(tree), {}, _method_placements(with_wraps)
    for node in _walk(tree):
        if type(node) in _OBSERVED:
            _observe(node, unit, methods, aliases)
    unit.decide(catalog, with_wraps, aliases)
    return unit.holder, unit.placement


def tokens_could_match(text: str, catalog: cat.Catalog = cat.DEFAULT_CATALOG, with_wraps: bool = True) -> bool:
    """The text and code stages: no parse of any kind."""
    if not text_could_match(text, catalog, with_wraps):
        return False
    code = _code_of(text)
    return code is None or text_could_match(code, catalog, with_wraps)


def could_match(
    text: str, catalog: cat.Catalog = cat.DEFAULT_CATALOG, with_wraps: bool = True, tree: Optional[ast.AST] = None
) -> bool:
    """All stages, cheapest first. `tree` is the stdlib tree when the caller has one (flake8 does);
    otherwise one is built here. Text that the stdlib cannot parse goes on to LibCST, which reports
    the error."""
    if not tokens_could_match(text, catalog, with_wraps):
        return False
    if tree is None:
        tree = _tree_of(text)
    return tree is None or tree_could_match(tree, catalog, with_wraps)


def settings_could_match(text: str, settings, tree: Optional[ast.AST] = None) -> bool:
    """`could_match` with a run's settings: their catalog, and wrappers only if an info rule runs."""
    return could_match(text, settings.catalog, wraps_selected(settings), tree)


def project_could_match(text: str, path: str, settings, index) -> bool:
    """For a file the stages above reject: whether the project modules it imports supply the holder or
    placement half its own text lacks (a `Trainer(model, opt)` whose constructor moves the model)."""
    if not index.follows(path):
        return False
    catalog, with_wraps = settings.catalog, wraps_selected(settings)
    raw_holder = _has_holder(text, catalog, with_wraps)  # the text stage's answer, remembered
    # an unpickling call is no half of the file's own here (see catalog.Prefilter.unpickling_patterns)
    if not raw_holder and not _has_placement(text, catalog, with_wraps, unpickling=False):
        # Most files: neither half even in the raw text. Both could still come from what it calls
        # (`trans_to_cuda(SessionGraph(opt))`), but asking every such file's calls cost 1.0-1.4 s on
        # transformers' 891 (+12-16% of its run) for one pair of the real-code corpus (SR-GNN's main.py):
        # they are passed over (a known gap; one whose halves are in comments only is asked, below).
        return False
    # The raw text's halves bound its code's from above (the code stage only blanks), so the calls
    # are judged against them first: most files that get this far move a model and call nothing that
    # could build an optimizer, and are rejected without lexing their code.
    external = index.called_halves(text, path, with_wraps, classes_only=not raw_holder)
    if not _halves_meet(raw_holder, True, external):
        return False
    code = _code_of(text)  # the code stage's text: a token in a comment or docstring is no half
    own_holder, own_placement = token_halves(text if code is None else code, catalog, with_wraps, unpickling=False)
    if not (own_holder or own_placement):
        return _calls_meet(text, path, catalog, with_wraps, index)  # the halves were in comments and docstrings
    if own_holder != raw_holder:
        # A file that builds no optimizer itself can only get one from a constructor (`Agent(...)`
        # whose `__init__` builds it): then only calls of classes need a look.
        external = index.called_halves(text, path, with_wraps, classes_only=True)
    if not _halves_meet(own_holder, own_placement, external):
        return False
    # The tree stage with those calls counted where they are made: the holder and the placement must
    # still meet in one unit (a function, a class, the module's own statements).
    tree = _tree_of(text)
    return tree is None or tree_could_match(tree, catalog, with_wraps, external)


def _calls_meet(text: str, path: str, catalog: cat.Catalog, with_wraps: bool, index) -> bool:
    """Whether a file that names neither half gets both from its calls. A text that never names an
    optimizer holds one only inside an object a constructor built (`SessionGraph(opt)` keeps it; a
    function's optimizer is bound to a name that names it): the calls of classes are asked first, and
    all its calls only when one of those builds an optimizer."""
    if not any(h for h, _ in index.called_halves(text, path, with_wraps, classes_only=True).values()):
        return False
    external = index.called_halves(text, path, with_wraps)
    if not _halves_meet(False, False, external):
        return False
    tree = _tree_of(text)
    return tree is None or tree_could_match(tree, catalog, with_wraps, external)


def _halves_meet(own_holder: bool, own_placement: bool, external: Dict[str, Tuple[bool, bool]]) -> bool:
    """Whether the calls supply a half, and with the file's own halves make both."""
    holders = {name for name, (h, _) in external.items() if h}
    placements = {name for name, (_, p) in external.items() if p}
    return bool(holders or placements) and _meet(own_holder, own_placement, holders, placements)


def _meet(holder: bool, placement: bool, called_holders: Set[str], called_placements: Set[str]) -> bool:
    """Whether a holder and a placement meet: the text's own, or those of the calls it makes. One call
    whose callee orders both halves itself is enough: that pair is the callee's, reported in its module,
    and by this file in a run that does not check that module (`findings.shown_in_run`)."""
    if holder and (placement or called_placements):
        return True
    if placement:
        return bool(called_holders)
    return bool(called_holders and called_placements)


def wraps_selected(settings) -> bool:
    """Whether a selected rule reads the placements that leave the parameters as they were (wrappers
    that share them, layout changes): the rule table says what each rule reads."""
    return _reads_canonical(settings.selection)


@lru_cache(maxsize=16)
def _reads_canonical(selection) -> bool:  # asked once per file: the answer is the selection's
    from .rules.table import kinds_read

    return bool(kinds_read(selection.codes()) & cat.CANONICAL_KINDS)


def stage_decisions(text: str, catalog: cat.Catalog = cat.DEFAULT_CATALOG, with_wraps: bool = True) -> Dict[str, bool]:
    """Each stage's own answer, every stage run (for soundness tests and the benchmark's counts);
    a stage that cannot decide (unsure lexing, no stdlib tree) answers True, as `could_match` does."""
    code = code_only(text)
    tree = parse_quietly(text)
    return {
        "text": text_could_match(text, catalog, with_wraps),
        "code": code is None or text_could_match(code, catalog, with_wraps),
        "tree": tree is None or tree_could_match(tree, catalog, with_wraps),
    }


def parse_quietly(text: str, keep: bool = False) -> Optional[ast.AST]:
    """`ast.parse` without its warnings (invalid escapes are the file's business, not ours), or None.
    `keep`: the tree is kept for the engine's syntax check and optimizer uses of the same text."""
    try:
        return python_tree(text, keep)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@lru_cache(maxsize=4)
def _method_placements(with_wraps: bool) -> frozenset:
    return cat.prefilter_methods(with_wraps)


_REPLACING_KEYWORDS = frozenset(keyword for keyword, _ in cat.KEYWORD_REPLACEMENTS.values())


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while True:  # `getattr(a, "b")` with a literal name is `a.b` (as analysis.names.dotted_name reads it)
        if type(node) is ast.Attribute:
            parts.append(node.attr)
            node = node.value
        elif (type(node) is ast.Call and type(node.func) is ast.Name and node.func.id == "getattr"
              and len(node.args) == 2 and not node.keywords and type(node.args[1]) is ast.Constant
              and isinstance(node.args[1].value, str) and node.args[1].value.isidentifier()):
            parts.append(node.args[1].value)
            node = node.args[0]
        else:
            break
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _qualified(dotted: str, aliases: Dict[str, Set[str]]) -> Iterable[str]:
    """The dotted name as written and as every import of its first part would make it."""
    yield dotted
    head, _, rest = dotted.partition(".")
    for target in aliases.get(head, ()):
        yield f"{target}.{rest}" if rest else target
