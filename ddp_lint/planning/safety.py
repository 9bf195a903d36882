"""What the statements a fix moves across may do to what it moves: the proof behind "safe".

A fix moves the optimizer's statement (and the statements built on it) from before a placement to
after it. That is safe (DESIGN §2) when the program behaves the same on every path except the bug:
nothing in between can read what moves, nothing in between changes what the moved statements read,
and nothing receives a different object than before. Each check below returns a `Finding` of the
statement in between: `refused` where the move would certainly change the program (a `NameError`,
a different list), otherwise `unsafe` where it may and ddp-lint cannot see (a call it cannot follow).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple

import libcst as cst

from .. import catalog as cat
from ..analysis.names import dotted_name, target_elements
from .statements import key_of, reads_and_binds

# Calls that hand over the namespace the moved name lives in.
_NAMESPACE_CALLS = frozenset({"locals", "globals", "vars", "dir", "eval", "exec"})
_FRAME_CALLS = frozenset({"sys._getframe", "inspect.currentframe", "inspect.stack", "inspect.getouterframes"})
# Methods that change a list, dict or set in place.
_MUTATORS = frozenset({
    "append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse", "update", "setdefault",
    "popitem", "add", "discard", "difference_update", "intersection_update", "symmetric_difference_update",
    "__setitem__", "__delitem__", "__iadd__",
})
# Methods that only read the container they are called on.
_READERS = frozenset({"copy", "keys", "items", "values", "get", "index", "count", "__len__", "__contains__",
                      "__getitem__", "format", "startswith", "endswith", "split", "join", "lower", "upper", "strip"})
# Calls that read their arguments and change nothing (loggers are recognised by their receiver).
_READING_CALLS = frozenset({
    "print", "len", "str", "repr", "format", "isinstance", "issubclass", "type", "id", "hash", "bool", "int", "float",
    "list", "tuple", "dict", "set", "frozenset", "sorted", "enumerate", "zip", "range", "min", "max", "sum", "any",
    "all", "hasattr", "callable", "iter", "reversed", "round", "abs", "map", "filter",
})
_LOGGERS = re.compile(r"^(?:logger|logging|log|LOGGER|_logger|LOG|warnings|pprint|tqdm\.write|wandb\.log|writer)\b")
# What the optimizer's parameter filter reads, and what changes it.
_GRAD_SWITCHES = cat.GRAD_SWITCHES
# A comment between the two points that asks for the order they are in.
_ORDER_COMMENT = re.compile(r"\b(?:order|before|after|first|must|required?|do not move)\b", re.I)
# Comments that are directives to tools, not notes to readers.
_DIRECTIVE = re.compile(r"#\s*(?:expect:|noqa|type:|pragma|fmt:|pylint:|isort:)", re.I)


@dataclass(frozen=True)
class Finding:
    refused: bool
    reason: str


def refused(reason: str) -> Finding:
    return Finding(True, reason)


def unsafe(reason: str) -> Finding:
    return Finding(False, reason)


class Definitions:
    """The functions and classes of one module, and where each is defined: enough to say what a call
    between the two points may read. Built once per planned fix from the module the planner has."""

    def __init__(self, root: cst.Module) -> None:
        self.root = root
        self.parent: Dict[int, Optional[cst.CSTNode]] = {}  # def id -> enclosing def (None: module)
        self.functions: Dict[int, Dict[str, cst.CSTNode]] = {}  # scope id (def or module) -> name -> def/lambda
        self.methods: Dict[int, Dict[str, cst.FunctionDef]] = {}  # class id -> method name -> def
        self._collect(root.body, root)
        self.imported = imported_names(root)  # modules and their names: never a container the optimizer reads
        self._reads: Dict[int, Tuple[FrozenSet[str], FrozenSet[str]]] = {}
        self._changes: Dict[Tuple[int, bool], bool] = {}

    def _collect(self, body: Iterable[cst.CSTNode], scope: cst.CSTNode) -> None:
        table = self.functions.setdefault(id(scope), {})
        for node in _statements_of(body):
            if isinstance(node, cst.FunctionDef):
                table[node.name.value] = node
                self.parent[id(node)] = scope
                self._collect(_body(node), node)
                if isinstance(scope, cst.ClassDef):
                    self.methods.setdefault(id(scope), {})[node.name.value] = node
            elif isinstance(node, cst.ClassDef):
                table[node.name.value] = node
                self.parent[id(node)] = scope
                self._collect(_body(node), node)
            elif isinstance(node, cst.SimpleStatementLine):
                for small in node.body:
                    if isinstance(small, cst.Assign) and isinstance(small.value, cst.Lambda):
                        for target in small.targets:
                            if isinstance(target.target, cst.Name):
                                table[target.target.value] = small.value
                                self.parent[id(small.value)] = scope

    def scope_of(self, statement_chain: Tuple[cst.CSTNode, ...]) -> cst.CSTNode:
        """The function whose body holds the statement, or the module."""
        first = statement_chain[0] if statement_chain else None
        return first if isinstance(first, cst.FunctionDef) else self.root

    def class_of(self, scope: cst.CSTNode) -> Optional[cst.ClassDef]:
        parent = self.parent.get(id(scope))
        return parent if isinstance(parent, cst.ClassDef) else None

    def resolve(self, name: str, scope: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The function a bare name calls from `scope`: its own, an enclosing function's, the module's.
        A class body is not an enclosing scope for the functions in it (Python's rule)."""
        while scope is not None:
            if not isinstance(scope, cst.ClassDef):
                found = self.functions.get(id(scope), {}).get(name)
                if found is not None:
                    return found
            scope = self.parent.get(id(scope)) if scope is not self.root else None
        return None

    def free_reads(self, function: cst.CSTNode) -> Tuple[FrozenSet[str], FrozenSet[str]]:
        """(names a function reads that it does not bind itself, `self.*` keys it reads), over
        everything it calls in this module as well."""
        return self._reads_of(function, set())

    def _reads_of(self, function: cst.CSTNode, visiting: Set[int]) -> Tuple[FrozenSet[str], FrozenSet[str]]:
        if id(function) in self._reads:
            return self._reads[id(function)]
        if id(function) in visiting:
            return frozenset(), frozenset()
        visiting.add(id(function))
        names: Set[str] = set()
        attributes: Set[str] = set()
        if isinstance(function, cst.ClassDef):
            return frozenset(), frozenset()  # a constructor call: its `__init__` is followed below
        collector = _AllReads()
        body = function.body if isinstance(function, cst.Lambda) else function.body
        body.visit(collector)
        own = _parameters(function) | (_local_binds(function) - collector.declared_outside)
        names |= {n for n in collector.names if n not in own}
        attributes |= collector.self_keys
        scope = function
        owner = self.class_of(function)
        for called in collector.called:
            target = self.resolve(called, scope)
            if isinstance(target, cst.ClassDef):
                target = self.methods.get(id(target), {}).get("__init__")
            if target is not None and target is not function:
                more, _ = self._reads_of(target, visiting)
                names |= more
        if owner is not None:
            for method in collector.self_called:
                target = self.methods.get(id(owner), {}).get(method)
                if target is not None:
                    _, more = self._reads_of(target, visiting)
                    attributes |= more
        result = frozenset(names), frozenset(attributes)
        self._reads[id(function)] = result
        return result

    def methods_named(self, name: str) -> List[cst.FunctionDef]:
        """Every method of that name in the module's classes: what `model.name()` may run when the
        model's class is one of them."""
        return [methods[name] for methods in self.methods.values() if name in methods]

    def changes_parameters(self, function: cst.CSTNode, constructing: bool = False) -> bool:
        """Whether a function of the module may add, remove or replace parameters of a module it is
        given or reaches (`m.add_module(...)`, `self.head = nn.Linear(...)`, `del m.fc`,
        `self.blocks.append(...)`), itself or through the module's functions and methods it calls.
        `constructing`: the function is a constructor, whose `self` is a new object, not one given."""
        return self._changes_of(function, constructing, set())

    def _changes_of(self, function: cst.CSTNode, constructing: bool, visiting: Set[Tuple[int, bool]]) -> bool:
        key = (id(function), constructing)
        if key in self._changes:
            return self._changes[key]
        if key in visiting or isinstance(function, cst.ClassDef):
            return False
        visiting.add(key)
        given = _parameters(function) - ({"self"} if constructing else set())
        local = _local_binds(function) - given | ({"self"} if constructing else set())
        found = False
        owner = self.class_of(function)
        for node in _walk(function.body):
            if _changes_given_module(node, local):
                found = True
                break
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
                target = self.resolve(node.func.value, function)
                builds = isinstance(target, cst.ClassDef)
                if builds:
                    target = self.methods.get(id(target), {}).get("__init__")
                if target is not None and target is not function and self._changes_of(target, builds, visiting):
                    found = True
                    break
            callee = dotted_name(node.func) if isinstance(node, cst.Call) else None
            if callee is not None and callee.startswith("self.") and callee.count(".") == 1 and owner is not None:
                target = self.methods.get(id(owner), {}).get(callee.split(".")[1])
                if target is not None and self._changes_of(target, constructing, visiting):
                    found = True
                    break
        self._changes[key] = found
        return found

    def mutates(self, function: cst.CSTNode) -> Set[str]:
        """Names a function changes in place (`x.append(...)`, `x[i] = ...`, `del x[i]`): its
        parameters by name, and names of outer scopes."""
        found: Set[str] = set()
        for node in _walk(function.body):
            found |= {key_of(changed) for changed in _mutated(node)}
        return found


def _statements_of(body: Iterable[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Statements of a body, descending into compound statements but not into definitions."""
    for statement in body:
        yield statement
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        for suite in _suites(statement):
            yield from _statements_of(suite)


def _suites(statement: cst.CSTNode) -> List[Iterable[cst.CSTNode]]:
    from ..analysis.blocks import suites

    return [suite.body for suite in suites(statement) if isinstance(suite, cst.IndentedBlock)]


def _body(definition: cst.CSTNode) -> List[cst.CSTNode]:
    body = definition.body
    return list(body.body) if isinstance(body, cst.IndentedBlock) else [body]


def _parameters(function: cst.CSTNode) -> Set[str]:
    params = function.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    names.update(p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param))
    return names


def _local_binds(function: cst.CSTNode) -> Set[str]:
    if isinstance(function, cst.Lambda):
        return set()
    binds: Set[str] = set()
    for statement in _statements_of(_body(function)):
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            binds.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            binds |= {b for b in reads_and_binds(statement)[1] if "." not in b}
        elif isinstance(statement, cst.For):
            binds |= {b for b in reads_and_binds(statement.target)[0] if "." not in b}
        elif isinstance(statement, cst.With):
            for item in statement.items:
                if item.asname is not None:
                    binds |= {b for b in reads_and_binds(item.asname.name)[0] if "." not in b}
    return binds


class _AllReads(cst.CSTVisitor):
    """Every name and `self.*` key read anywhere inside, nested definitions included (a closure
    called later reads them too), and the bare names and `self.` methods it calls."""

    def __init__(self) -> None:
        self.names: Set[str] = set()
        self.self_keys: Set[str] = set()
        self.called: Set[str] = set()
        self.self_called: Set[str] = set()
        self.declared_outside: Set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        dotted = dotted_name(node)
        if dotted is not None and dotted.startswith("self.") and dotted.count(".") >= 1:
            self.self_keys.add(key_of(dotted))

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name):
            self.called.add(node.func.value)
        dotted = dotted_name(node.func)
        if dotted is not None and dotted.startswith("self.") and dotted.count(".") == 1:
            self.self_called.add(dotted.split(".")[1])

    def visit_Global(self, node: cst.Global) -> None:
        self.declared_outside.update(n.name.value for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.declared_outside.update(n.name.value for n in node.names)


def _walk(node: cst.CSTNode, into_definitions: bool = True) -> Iterator[cst.CSTNode]:
    """Every node under `node`; without `into_definitions`, not the bodies of functions and lambdas
    defined there (they run when called, and calls are followed separately). A class body runs
    where it is defined, but its methods do not."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if not into_definitions:
            if isinstance(current, cst.FunctionDef):
                stack.extend(current.decorators)
                stack.extend(p.default for p in current.params.params if p.default is not None)
                continue
            if isinstance(current, cst.Lambda) and current is not node:
                continue
        stack.extend(reversed(current.children))


def _mutated(node: cst.CSTNode) -> Set[str]:
    """What this one node changes in place, as precisely as the code names it: `args.batch_size` for
    an attribute write, `groups` for `groups[0]["lr"] = ...` or `groups.append(...)`."""
    found: Set[str] = set()
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _MUTATORS:
        root = _changed_part(node.func.value)
        if root:
            found.add(root)
    elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Del)):
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        else:
            targets = [node.target]
        for target in targets:
            for element in target_elements(target):
                if isinstance(element, (cst.Subscript, cst.Attribute)):
                    root = _changed_part(element)
                    if root:
                        found.add(root)
    return found


def _changes_given_module(node: cst.CSTNode, local: Set[str]) -> bool:
    """Whether this node of a followed function may change the parameters of a module the function
    was given or reaches; names bound only inside it (`out.append(x)`) are its own lists."""
    if isinstance(node, cst.Call):
        if _changing_function(node):
            return True
        if isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method in _REGISTERING_METHODS or (method == cat.LOAD_STATE and _assigns(node)):
                return True
            if method in _MUTATORS and isinstance(node.func.value, (cst.Attribute, cst.Subscript)):
                return _root_name(node.func.value) not in local  # `self.blocks.append(...)`: maybe a ModuleList
        return False
    targets: List[cst.CSTNode] = []
    if isinstance(node, cst.Assign) and not _is_constant(node.value):
        targets = [element for t in node.targets for element in target_elements(t.target)]
    elif isinstance(node, cst.AnnAssign) and node.value is not None and not _is_constant(node.value):
        targets = list(target_elements(node.target))
    elif isinstance(node, cst.Del):
        targets = list(target_elements(node.target))
    for element in targets:
        if isinstance(element, cst.Attribute) and element.attr.value in _VALUE_FIELDS:
            continue  # `m.weight.data = t` changes values, not which tensors are parameters
        if isinstance(element, (cst.Attribute, cst.Subscript)) and isinstance(element.value, (cst.Name, cst.Attribute)):
            root = _root_name(element.value)
            if root is not None and root.split(".")[0] not in local:
                return True
    return False


def _changing_function(call: cst.Call) -> bool:
    """`setattr(m, ...)`, `delattr(m, ...)`, `parametrize.register_parametrization(m, ...)`: a cataloged
    function that changes the parameters of the module it is given."""
    terminal = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
    if terminal in ("setattr", "delattr"):
        return isinstance(call.func, cst.Name)  # the builtins, not some object's method of that name
    return terminal in cat.PARAMETER_CHANGING_FUNCTIONS


_VALUE_FIELDS = cat.TENSOR_VALUE_FIELDS
_REGISTERING_METHODS = cat.REGISTERING_METHODS


def _assigns(call: cst.Call) -> bool:
    """`load_state_dict(..., assign=...)` with anything but a literal False: it may swap in new tensors."""
    return any(arg.keyword is not None and arg.keyword.value == "assign"
               and not (isinstance(arg.value, cst.Name) and arg.value.value in ("False", "None")) for arg in call.args)


def _is_constant(value: cst.CSTNode) -> bool:
    """A literal: it cannot be a module or a parameter (`self.calls = 0`)."""
    if isinstance(value, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                          cst.FormattedString, cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.BooleanOperation)):
        return True
    return isinstance(value, cst.Name) and value.value in ("True", "False", "None")


def _changed_part(node: cst.CSTNode) -> Optional[str]:
    dotted = dotted_name(node)
    if dotted is not None and "." in dotted:
        return dotted
    return _root_name(node.value if isinstance(node, (cst.Subscript, cst.Attribute)) else node) if not isinstance(
        node, cst.Name) else node.value


def dotted_reads(statements: Iterable[cst.CSTNode]) -> Set[str]:
    """Every name and attribute chain the statements read, whole (`args.lr`, not `args`); a name
    used on its own (`f(args)`) stands for all of it."""
    found: Set[str] = set()
    for statement in statements:
        stack = [statement]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Attribute):
                dotted = dotted_name(node)
                if dotted is not None:
                    found.add(dotted)
                    continue
            elif isinstance(node, cst.Name):
                found.add(node.value)
            elif isinstance(node, cst.Arg):
                stack.append(node.value)  # not the keyword's name
                continue
            stack.extend(node.children)
    return found


def _overlaps(changed: str, reads: Set[str]) -> bool:
    return any(r == changed or r.startswith(changed + ".") or changed.startswith(r + ".") for r in reads)


def _root_name(node: cst.CSTNode) -> Optional[str]:
    """`groups` for `groups[0]["lr"]`, `self.cfg` for `self.cfg.lr`: the name keyed as the planner keys it."""
    while isinstance(node, (cst.Subscript, cst.Call)) or (isinstance(node, cst.Attribute) and dotted_name(node) is None):
        node = node.value if isinstance(node, cst.Subscript) else node.func if isinstance(node, cst.Call) else node.value
    dotted = dotted_name(node)
    return key_of(dotted) if dotted is not None else None


def _plain_chain(node: cst.CSTNode) -> bool:
    """A name, or attributes and subscripts of one (`model.blocks[0]`), with no call in between."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return isinstance(node, cst.Name)


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _callee_text(call: cst.Call) -> str:
    return dotted_name(call.func) or cst.Module(body=[]).code_for_node(call.func)


class Between:
    """Checks one statement the fix moves across, given what is moving at that point."""

    def __init__(self, definitions: Definitions, scope: cst.CSTNode, imported: Set[str], line_of: Callable) -> None:
        self.definitions = definitions
        self.scope = scope
        self.imported = imported
        self.line_of = line_of
        self.aliases: Dict[str, str] = {}  # a name bound in between to part of a container -> the container
        self.module_aliases: Set[str] = set()  # names bound in between to a held module or one inside it

    def check(self, statement: cst.CSTNode, moving: Set[str], reads: Set[str], exact_reads: Set[str],
              models: Set[str], filters_requires_grad: bool, is_placement: bool) -> Optional[Finding]:
        """`moving`: names the moved statements bind; `reads`: what they read (before this point), keyed
        like handles, and `exact_reads` the same whole (`args.lr`); `models`: the optimizer's models
        (the placement changes those by design)."""
        line = self.line_of(statement)
        containers = {r for r in reads if r not in moving and r not in models and r.split(".")[0] not in self.imported}
        plain = {m for m in moving if "." not in m}
        attributes = {m for m in moving if m.startswith("self.")}
        found: List[Finding] = []
        self._note_aliases(statement, containers)  # first: `for g in groups: g["lr"] = 0` is one statement
        self._note_module_aliases(statement, models)
        held = models | self.module_aliases
        for node in _walk(statement, into_definitions=False):
            # A placement changes the model by design; a parametrization on the same line may still
            # register new parameters (a `right_inverse` that returns several tensors).
            if not is_placement or (isinstance(node, cst.Call) and _changing_function(node)):
                change = self._parameter_change(node, line, held)
                if change is not None:
                    found.append(change)
            if isinstance(node, cst.Call):
                found.extend(self._call(node, line, plain, attributes, containers, models, filters_requires_grad,
                                        is_placement))
            for changed in _mutated(node):
                root = key_of(changed)
                if root in self.aliases:
                    root = changed = self.aliases[root]
                if root in containers and _overlaps(changed, exact_reads):
                    found.append(refused(f"line {line} changes `{changed}` in place, and the moved statement reads it"))
                elif root in models and not is_placement and isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                    found.append(unsafe(f"line {line} sets `{changed}`, which the moved optimizer may read"))
            if isinstance(node, cst.Attribute) and node.attr.value == "__dict__" and (attributes or plain):
                found.append(refused(f"line {line} reads `{dotted_name(node) or '__dict__'}`, where the moved "
                                     f"statement's names would be missing"))
            if isinstance(node, cst.Attribute) and node.attr.value in _GRAD_SWITCHES and filters_requires_grad:
                found.append(unsafe(f"line {line} may change which parameters require grad, and the optimizer "
                                    f"keeps only those that do"))
        return _strongest(found)

    def _call(self, call: cst.Call, line: int, plain: Set[str], attributes: Set[str], containers: Set[str],
              models: Set[str], filters_requires_grad: bool, is_placement: bool) -> List[Finding]:
        found: List[Finding] = []
        callee = dotted_name(call.func)
        # What a call is handed: a name or an element of one; `args.lr` hands over a value read from it.
        argument_roots = [_root_name(arg.value) if isinstance(arg.value, (cst.Name, cst.Subscript)) else None
                          for arg in call.args]
        if callee in _NAMESPACE_CALLS or callee in _FRAME_CALLS:
            if callee in ("vars", "dir") and call.args:
                if "self" in argument_roots and attributes:
                    found.append(refused(f"line {line} reads `{callee}(self)`, where `{sorted(attributes)[0]}` would "
                                         f"be missing"))
            elif plain or attributes:
                found.append(refused(f"line {line} reads the namespace through `{callee}()`, where "
                                     f"`{sorted(plain | attributes)[0]}` would be missing"))
            return found
        if isinstance(call.func, cst.Name):
            target = self.definitions.resolve(call.func.value, self.scope)
            if isinstance(target, cst.ClassDef):
                target = self.definitions.methods.get(id(target), {}).get("__init__")
            if target is not None:
                names, _ = self.definitions.free_reads(target)
                visible = plain if self._sees_locals(target) else set()
                hit = sorted(visible & names)
                if hit:
                    found.append(refused(f"line {line} calls `{call.func.value}()`, which reads `{hit[0]}` before "
                                         f"the moved statement would bind it"))
                changed = self.definitions.mutates(target)
                outer = sorted(changed & containers - _parameters(target) if not isinstance(target, cst.Lambda) else set())
                if outer:
                    found.append(refused(f"line {line} calls `{call.func.value}()`, which changes `{outer[0]}` in "
                                         f"place, and the moved statement reads it"))
                given = [root for root in argument_roots if root in containers]
                if given and changed & _parameters(target):
                    found.append(unsafe(f"line {line} passes `{given[0]}` to `{call.func.value}()`, which may change "
                                        f"it"))
                return found
        if callee is not None and callee.startswith("self.") and callee.count(".") == 1 and attributes:
            owner = self.definitions.class_of(self.scope)
            method = self.definitions.methods.get(id(owner), {}).get(callee.split(".")[1]) if owner is not None else None
            if method is None:
                found.append(unsafe(f"line {line} calls `{callee}()`, defined outside this class, which may read "
                                    f"`{sorted(attributes)[0]}`"))
            else:
                _, keys = self.definitions.free_reads(method)
                hit = sorted(keys & attributes)
                if hit:
                    found.append(refused(f"line {line} calls `{callee}()`, which reads `{hit[0]}` before the moved "
                                         f"statement would set it"))
            return found
        if "self" in argument_roots and attributes:
            found.append(unsafe(f"line {line} passes `self` to `{_callee_text(call)}()`, which may read "
                                f"`{sorted(attributes)[0]}`"))
        if is_placement:
            return found
        receiver = _root_name(call.func.value) if isinstance(call.func, cst.Attribute) else None
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        if receiver is not None and self.aliases.get(receiver, receiver) in containers and method not in _READERS:
            if method not in _MUTATORS:  # mutators are refused by the caller
                found.append(unsafe(f"line {line} calls `{callee or method}()`, which may change "
                                    f"`{self.aliases.get(receiver, receiver)}`"))
        if callee is not None and (callee in _READING_CALLS or _LOGGERS.match(callee)):
            return found
        if method in _READERS or method in _MUTATORS:
            return found
        given = [self.aliases.get(root, root) for root in argument_roots if root is not None]
        for name in given:
            if name in containers:
                found.append(unsafe(f"line {line} passes `{name}` to `{_callee_text(call)}()`, which may change it"))
                break
            if name in models and filters_requires_grad:
                found.append(unsafe(f"line {line} passes `{name}` to `{_callee_text(call)}()`, which may change "
                                    f"which parameters require grad, and the optimizer keeps only those that do"))
                break
        if receiver in models and filters_requires_grad and method not in _READERS:
            found.append(unsafe(f"line {line} calls `{callee or method}()`, which may change which parameters require "
                                f"grad, and the optimizer keeps only those that do"))
        return found

    def _parameter_change(self, node: cst.CSTNode, line: int, held: Set[str]) -> Optional[Finding]:
        """A statement between that may add, remove or replace parameters of a module the optimizer
        holds: the moved optimizer, built on `model.parameters()` after it, would hold a different set."""
        if isinstance(node, cst.Del):
            for element in target_elements(node.target):
                if isinstance(element, (cst.Attribute, cst.Subscript)) and _root_name(element) in held:
                    return unsafe(f"line {line} deletes `{_code(element)}`, which may remove parameters that the "
                                  f"optimizer holds where it is now and would not hold after the move")
            return None
        if not isinstance(node, cst.Call):
            return None
        what = None
        if isinstance(node.func, cst.Attribute) and _plain_chain(node.func.value):
            root = _root_name(node.func.value)
            if root in held and self._method_changes_parameters(node):
                what = root
        if what is None and (_changing_function(node) or self._function_changes_parameters(node)):
            given = [_root_name(arg.value) for arg in node.args if _plain_chain(arg.value)]
            what = next((root for root in given if root in held), None)
            if what is None and isinstance(node.func, cst.Name):
                target = self.definitions.resolve(node.func.value, self.scope)
                if target is not None and not isinstance(target, cst.ClassDef) and self._sees_locals(target):
                    what = next(iter(sorted(self.definitions.free_reads(target)[0] & held)), None)
        callee = dotted_name(node.func)
        if what is None and callee is not None and callee.startswith("self.") and callee.count(".") == 1:
            # `self.setup_head()` in a trainer whose optimizer holds `self.model`: what the method does to it.
            owner = self.definitions.class_of(self.scope)
            method = self.definitions.methods.get(id(owner), {}).get(callee[5:]) if owner is not None else None
            if method is not None and self.definitions.changes_parameters(method):
                what = next(iter(sorted(self.definitions.free_reads(method)[1] & held)), None)
        if what is None:
            return None
        return unsafe(f"line {line} calls `{_code(node.func)}()`, which may add, remove or replace parameters of "
                      f"`{what}`: the optimizer moved after it would hold a different set of parameters")

    def _method_changes_parameters(self, call: cst.Call) -> bool:
        """`model.method(...)`: the catalog's methods that keep the parameters and in-place tensor
        methods keep them; a method that the module's classes define is followed; any other may not."""
        method = call.func.attr.value
        if method == cat.LOAD_STATE:
            return _assigns(call)
        if method in cat.PARAMETER_KEEPING_METHODS or (method.endswith("_") and not method.startswith("_")):
            return False
        if method in _REGISTERING_METHODS:
            return True
        if method == cat.APPLY and call.args:
            function = call.args[0].value
            if isinstance(function, cst.Name):
                function = self.definitions.resolve(function.value, self.scope)
            return not isinstance(function, (cst.FunctionDef, cst.Lambda)) or self.definitions.changes_parameters(function)
        defined = self.definitions.methods_named(method)
        return not defined or any(self.definitions.changes_parameters(m) for m in defined)

    def _function_changes_parameters(self, call: cst.Call) -> bool:
        """A function of the module that changes the parameters of what it is given or reaches."""
        if not isinstance(call.func, cst.Name):
            return False
        target = self.definitions.resolve(call.func.value, self.scope)
        builds = isinstance(target, cst.ClassDef)
        if builds:
            target = self.definitions.methods.get(id(target), {}).get("__init__")
        return target is not None and self.definitions.changes_parameters(target, constructing=builds)

    def _note_module_aliases(self, statement: cst.CSTNode, models: Set[str]) -> None:
        """`layer = model[0]`, `for m in model.modules():`: changing `layer` or `m` changes the model."""
        for value, targets in _bindings(statement):
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and (
                    value.func.attr.value in cat.MODULE_ITERATORS or value.func.attr.value == cat.GET_SUBMODULE):
                value = value.func.value
            if not _plain_chain(value) or _root_name(value) not in models | self.module_aliases:
                continue
            for target in targets:
                for element in target_elements(target):
                    if isinstance(element, cst.Name):
                        self.module_aliases.add(element.value)

    def _sees_locals(self, function: cst.CSTNode) -> bool:
        """Whether a function called from the holder's scope can see that scope's names: a closure
        defined inside it, or any function of the module when the holder is a module global."""
        if self.scope is self.definitions.root:
            return True
        parent = self.definitions.parent.get(id(function))
        while parent is not None and parent is not self.definitions.root:
            if parent is self.scope:
                return True
            parent = self.definitions.parent.get(id(parent))
        return False

    def _note_aliases(self, statement: cst.CSTNode, containers: Set[str]) -> None:
        """`g = groups[0]` or `for g in groups:` makes `g` part of `groups`: changing `g` changes it."""
        for value, targets in _bindings(statement):
            reads, _ = reads_and_binds(value)
            source = next((self.aliases.get(r, r) for r in sorted(reads) if self.aliases.get(r, r) in containers), None)
            if source is None:
                continue
            for target in targets:
                for element in target_elements(target):
                    if isinstance(element, cst.Name) and element.value != source:
                        self.aliases[element.value] = source


def _strongest(found: List[Finding]) -> Optional[Finding]:
    for finding in found:
        if finding.refused:
            return finding
    return found[0] if found else None


def imported_names(root: cst.Module) -> Set[str]:
    """Every name an import binds anywhere in the module. Imports are statements: expressions are
    not descended into (most of a file's nodes), and the answer is kept for the last module asked
    about, since every fix planned in one file asks again (0.25 s a plan in a 3,000-line file)."""
    if _IMPORTED and _IMPORTED[0] is root:
        return _IMPORTED[1]
    names: Set[str] = set()
    for node in _statements(root):
        if isinstance(node, cst.Import):
            for alias in node.names:
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    names.add(alias.asname.name.value)
                else:
                    names.add((dotted_name(alias.name) or "").split(".")[0])
        elif isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    names.add(alias.asname.name.value)
                elif isinstance(alias.name, cst.Name):
                    names.add(alias.name.value)
    _IMPORTED[:] = [root, names]
    return names


_IMPORTED: list = []


_STATEMENT_FIELDS = ("body", "orelse", "handlers", "finalbody", "cases")


def _statements(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every statement under `node`, through the fields that hold statements (LibCST's `children`
    visits every expression node too, and costs most of a walk)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, cst.BaseSmallStatement):
            continue
        for name in _STATEMENT_FIELDS:
            value = getattr(current, name, None)
            if isinstance(value, (list, tuple)):
                stack.extend(value)
            elif isinstance(value, cst.CSTNode) and not isinstance(value, cst.BaseExpression):
                stack.append(value)


def order_comment(statements: Iterable[cst.CSTNode], line_of: Callable) -> Optional[Finding]:
    """A comment on or above a statement of the span that says the order is wanted."""
    for statement in statements:
        for node in _walk(statement, into_definitions=False):
            comments = []
            for empty in getattr(node, "leading_lines", ()):
                if empty.comment is not None:
                    comments.append(empty.comment.value)
            trailing = getattr(node, "trailing_whitespace", None)
            if isinstance(trailing, cst.TrailingWhitespace) and trailing.comment is not None:
                comments.append(trailing.comment.value)
            if isinstance(node, cst.Comment):
                comments.append(node.value)
            for comment in comments:
                if _ORDER_COMMENT.search(comment) and not _DIRECTIVE.match(comment):
                    text = comment if len(comment) <= 60 else comment[:57] + "..."
                    return unsafe(f"a comment near line {line_of(statement)} says the order matters (`{text}`)")
    return None


def hook_receives_wrapper(holder_call: Optional[cst.Call], models: Set[str], rebinding: Optional[str],
                          line: int) -> Optional[Finding]:
    """The optimizer comes from a function given the model itself (`self.build_optimizer(cfg, model)`),
    and the placement rebinds that name to a wrapper: after the move the function gets the wrapper.
    A hook subclasses override is written against what it was given before."""
    if holder_call is None or rebinding is None or rebinding not in models:
        return None
    if any(_root_name(arg.value) == rebinding and isinstance(arg.value, cst.Name) for arg in holder_call.args):
        return unsafe(f"`{_callee_text(holder_call)}()` would receive the wrapper made on line {line}, not the module "
                      f"`{rebinding}` that it (or code overriding it) was written for")
    return None


def sharded_state_load(moved: Iterable[cst.CSTNode], holder_keys: Set[str], operations: Iterable[str]) -> Optional[str]:
    """A state load on the optimizer that moves after a placement that shards the parameters: a
    state saved for full parameters no longer matches them (it needs the wrapper's own API)."""
    operation = next((o for o in operations if o in cat.SHARDING_OPERATIONS), None)
    if operation is None:
        return None
    for statement in moved:
        for node in _walk(statement, into_definitions=False):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == cat.LOAD_STATE:
                if _root_name(node.func.value) in holder_keys:
                    return (f"the state loaded into the optimizer was saved for unsharded parameters and no longer "
                            f"matches them after `{operation}`; convert it with the wrapper's API, such as "
                            f"`FSDP.optim_state_dict_to_load`")
    return None


def filters_requires_grad(statements: Iterable[cst.CSTNode]) -> bool:
    """The optimizer keeps only the parameters that require grad when it is built."""
    return any(isinstance(node, cst.Attribute) and node.attr.value == cat.REQUIRES_GRAD
               for statement in statements for node in _walk(statement))


def _bindings(statement: cst.CSTNode):
    """(value, targets) of each `x = value` and `for x in value:` in a statement, nested ones too."""
    for node in _walk(statement, into_definitions=False):
        if isinstance(node, cst.Assign):
            yield node.value, [t.target for t in node.targets]
        elif isinstance(node, cst.For):
            yield node.iter, [node.target]
