"""Whether a function's local name is dead after a statement: nothing reads it there, and nothing it was
handed to before can read it for it. Generic Python (no PyTorch): a holder kept only under such a name
is never stepped or loaded again, so a placement after its last use cannot touch it (a second
`Trainer(model)` after the first trainer finished).

A name is dead after a statement when, in the function's own body:
- it is not a parameter, nor declared `global` or `nonlocal` (its object may live on elsewhere);
- before the statement, every use is a binding (`trainer = Trainer(model)`) or an expression
  statement calling a method on it (`trainer.fit(...)`): an argument, an alias, a returned or stored
  value, or a result kept from one of its methods may carry the object on;
- no nested function or lambda names it (it may be called later, with the object);
- after the statement, and anywhere in a loop around it (the next pass), nothing names it at all;
- and it was used before (a method called on it): its work ended there.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import libcst as cst

# (whether the occurrence only binds the name or calls a method on it in a statement of its own,
# the statement node that holds it, the compound statements around it)
_Occurrence = Tuple[bool, cst.CSTNode, Tuple[cst.CSTNode, ...]]
_CACHE: Dict[Tuple[int, str], Tuple[cst.FunctionDef, object]] = {}
_ORDERS: Dict[int, Tuple[cst.FunctionDef, object]] = {}
_CALLED = "called"  # a use that calls a method on the name, in a statement of its own (truthy)


def dead_after(function: cst.FunctionDef, name: str, statement: cst.CSTNode) -> bool:
    """Whether `name`, a local of `function`, is dead once `statement` (in its body) has run."""
    found = _occurrences(function, name)
    if found is None or not isinstance(statement, cst.SimpleStatementLine):
        return False
    order, around = _statement_order(function)
    at = order.get(id(statement))
    if at is None:
        return False  # not in the body as walked: say nothing
    loops = [node for node in around[id(statement)] if isinstance(node, (cst.For, cst.While))]
    used = False
    for harmless, holder, enclosing in found:
        # the statement itself counts as before it (`create_trainer(model, optimizer, device=...)` hands
        # the optimizer on: no harmless use)
        if order.get(id(holder), at + 1) > at or not harmless or any(loop in enclosing for loop in loops):
            return False
        used |= harmless is _CALLED
    # Its work ended before: one never used at all is a truncated or unfinished use (`opt = Adam(...);
    # model.cuda()`), where the order is still what the code says
    return used


def named_after(root: cst.CSTNode, name: str, statement: cst.CSTNode) -> bool:
    """Whether anything in `root` (a function, or a module for its top level) reads what `name` holds
    once `statement` has run: later in document order, or in a loop around it (the next pass), unless a
    binding of the name comes first on the way (in a block around the read: `optimizer = Adam(...)` in
    the other arm of an `if`, in the next pass); or in a nested function or lambda (it may run at any
    time). True when unsure, and when nothing read it before either (its work never started)."""
    body = root.body if isinstance(root, cst.FunctionDef) else root
    found: List[_Occurrence] = []
    for reader in _readers(root, name):
        visitor = _Uses(reader, definitions_run_when_called=isinstance(root, cst.Module))
        body.visit(visitor)
        if visitor.escapes:
            return True
        found += visitor.found if reader == name else [(False, holder, around) for _, holder, around in visitor.found]
    order, around = _statement_order(root)
    at = order.get(id(statement))
    if at is None:
        return True
    here = around[id(statement)]
    loops = [node for node in here if isinstance(node, (cst.For, cst.While))]
    bindings = [(order.get(id(holder), -1), enclosing) for harmless, holder, enclosing in found if harmless is True]

    def covered(where: int, enclosing, loop=None) -> bool:
        if loop is None:
            return any(at < b < where and _within(outer, enclosing) for b, outer in bindings)
        return any((b < where and loop in outer and _within(outer, enclosing)) or (at < b and _within(outer, here))
                   for b, outer in bindings)

    read_before = False
    for harmless, holder, enclosing in found:
        where = order.get(id(holder), at + 1)
        if harmless is True:
            continue  # a binding reads nothing
        read_before |= where < at
        if where > at and not covered(where, enclosing):
            return True
        if where <= at and any(loop in enclosing and not covered(where, enclosing, loop) for loop in loops):
            return True
    # never read before either: a truncated or unfinished use, where the order is what the code says
    return not read_before


def _readers(root: cst.CSTNode, name: str) -> List[str]:
    """The name, and at a module's top level the functions and classes of the module that read it as a
    global (directly or through another of them): a call of one after the statement reads it."""
    readers = [name]
    if not isinstance(root, cst.Module):
        return readers
    definitions = [d for d in root.body if isinstance(d, (cst.FunctionDef, cst.ClassDef))]
    grew = True
    while grew:
        grew = False
        for definition in definitions:
            if definition.name.value not in readers and _names_any(definition, readers):
                readers.append(definition.name.value)
                grew = True
    return readers


def _names_any(node: cst.CSTNode, names: List[str]) -> bool:
    found = []

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            if name.value in names:
                found.append(name)

    node.visit(_Names())
    return bool(found)


def _within(outer: Tuple[cst.CSTNode, ...], inner: Tuple[cst.CSTNode, ...]) -> bool:
    """Whether a statement with compound statements `outer` around it sits in a block around one with
    `inner` (so that it runs first on every path through the latter, when it comes first)."""
    return len(outer) <= len(inner) and all(x is y for x, y in zip(outer, inner))


def _occurrences(function: cst.FunctionDef, name: str):
    key = (id(function), name)
    cached = _CACHE.get(key)
    if cached is not None and cached[0] is function:
        return cached[1]
    if len(_CACHE) > 256:
        _CACHE.clear()
    params = function.params
    if name in {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)} or (
            isinstance(params.star_arg, cst.Param) and params.star_arg.name.value == name) or (
            params.star_kwarg is not None and params.star_kwarg.name.value == name):
        result = None
    else:
        visitor = _Uses(name)
        function.body.visit(visitor)
        result = None if visitor.escapes else visitor.found
    _CACHE[key] = (function, result)
    return result


def _statement_order(function: cst.FunctionDef):
    """Each statement's place in the body's document order, and the compound statements around it."""
    cached = _ORDERS.get(id(function))
    if cached is not None and cached[0] is function:
        return cached[1]
    if len(_ORDERS) > 64:
        _ORDERS.clear()
    visitor = _Order()
    (function.body if isinstance(function, cst.FunctionDef) else function).visit(visitor)
    _ORDERS[id(function)] = (function, (visitor.order, visitor.around))
    return visitor.order, visitor.around


class _Uses(cst.CSTVisitor):
    """Each occurrence of the name in document order, and whether it escapes for good (a nested
    function or lambda names it, or a `global`/`nonlocal` declares it)."""

    def __init__(self, name: str, definitions_run_when_called: bool = False) -> None:
        self.name = name
        self.found: List[_Occurrence] = []
        self.escapes = False
        self._stack: List[cst.CSTNode] = []  # compound statements, then the simple statement
        self._nested = 0
        # a module's functions and classes: what they do happens at their calls (replayed there)
        self._skip_definitions = definitions_run_when_called

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return not self._skip_definitions

    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        if self._skip_definitions:
            return False
        self._nested += 1
        return None

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if not self._skip_definitions:
            self._nested -= 1

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._nested += 1

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._nested -= 1

    def visit_Global(self, node: cst.Global) -> None:
        self.escapes |= any(item.name.value == self.name for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.escapes |= any(item.name.value == self.name for item in node.names)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._stack.append(node)

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self._stack.pop()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseCompoundStatement):
            self._stack.append(node)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        if isinstance(original_node, cst.BaseCompoundStatement):
            self._stack.pop()

    def visit_Name(self, node: cst.Name) -> None:
        if node.value != self.name:
            return
        if self._nested:
            self.escapes = True
            return
        statement = self._stack[-1] if self._stack else None
        self.found.append((_harmless(statement, node), statement, tuple(self._stack[:-1])))


def _harmless(statement, node: cst.Name):
    """A binding of the name alone (`trainer = Trainer(model)`: True), or a statement that only calls a
    method on it (`trainer.fit(...)`: _CALLED); False for any other use."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if isinstance(small, cst.Assign):
        return any(target.target is node for target in small.targets)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        func = small.value.func
        if isinstance(func, cst.Attribute) and func.value is node:
            return _CALLED  # an argument naming it too is an occurrence of its own, judged apart
    return False


class _Order(cst.CSTVisitor):
    def __init__(self) -> None:
        self.order: Dict[int, int] = {}
        self.around: Dict[int, Tuple[cst.CSTNode, ...]] = {}
        self._stack: List[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.order[id(node)] = len(self.order)
            self.around[id(node)] = tuple(self._stack)
        if isinstance(node, cst.BaseCompoundStatement):
            self._stack.append(node)
        return not isinstance(node, (cst.BaseExpression, cst.SimpleStatementLine))

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, cst.BaseCompoundStatement):
            self._stack.pop()
