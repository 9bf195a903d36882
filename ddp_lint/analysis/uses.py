"""Which names a file uses as optimizers: evidence from use, not from what they are called.

A call known only by its name (`build_optimizer(model)`, `make_optim(net)`) is taken to build an
optimizer when what it returns is used as one somewhere in the file: stepped or zeroed, its
`param_groups` read or added to, handed to a scheduler, a gradient scaler or an optimizer wrapper, or
passed as an `optimizer=` argument. A helper that merely has "optim" in its name (`optim_context()`,
`optimal_sobol_indices()`, `_test_optimizer()`) and whose result is never used so is not one.

Names are compared by their last part, so `self.optimizer = build_optimizer(...)` in `__init__` is
confirmed by `trainer.optimizer.step()` in another method or class of the file.
"""
from __future__ import annotations

import re
from typing import Dict, FrozenSet, List, Optional, Set

import libcst as cst

from .. import catalog as cat
from .names import dotted_name

_OPTIMIZER_KEYWORD = re.compile(cat.OPTIMIZER_KEYWORD)
_TAKES_OPTIMIZER = re.compile(cat.TAKES_OPTIMIZER_CALL)
_SCALER_RECEIVER = re.compile(cat.SCALER_RECEIVER)


def use_key(dotted: str) -> str:
    """`self.optimizer` and `trainer.optimizer` are one use key: `optimizer`."""
    return dotted.rsplit(".", 1)[-1]


def _root_of(node: cst.BaseExpression) -> Optional[str]:
    """`self.optimizers[0]` -> `self.optimizers`; a dotted name as it is."""
    while isinstance(node, cst.Subscript):
        node = node.value
    return dotted_name(node)


class _Collector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.used: Set[str] = set()
        self.loops: Dict[str, List[str]] = {}  # loop variable -> the iterables it walks

    def _add(self, node: cst.BaseExpression) -> None:
        for element in node.elements if isinstance(node, (cst.List, cst.Tuple)) else ():
            self._add(element.value)
        root = _root_of(node)
        if root is not None:
            self.used.add(use_key(root))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in cat.OPTIMIZER_USE_ATTRIBUTES:
            self._add(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        positional = [a for a in node.args if a.keyword is None and a.star == ""]
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = dotted_name(func.value) or ""
            if method == "step" and positional and _SCALER_RECEIVER.search(receiver.rsplit(".", 1)[-1]):
                self._add(positional[0].value)  # `scaler.step(optimizer)`
            elif method in cat.OPTIMIZER_USE_METHODS:
                self._add(func.value)
        terminal = (dotted_name(func) or "").rsplit(".", 1)[-1]
        if terminal and _TAKES_OPTIMIZER.search(terminal):
            for arg in positional:
                self._add(arg.value)
        elif terminal in cat.TAKES_OPTIMIZER_SECOND and len(positional) >= 2:
            self._add(positional[1].value)  # `amp.initialize(model, optimizer)`
        for arg in node.args:
            if arg.keyword is not None and _OPTIMIZER_KEYWORD.match(arg.keyword.value):
                self._add(arg.value)

    def visit_For(self, node: cst.For) -> None:
        target = dotted_name(node.target)
        items = [e.value for e in node.iter.elements] if isinstance(node.iter, (cst.List, cst.Tuple)) else [node.iter]
        for source in filter(None, map(_root_of, items)):
            if target is not None:
                self.loops.setdefault(target, []).append(use_key(source))


def optimizer_uses(module: cst.Module) -> FrozenSet[str]:
    """The use keys of everything `module` uses as an optimizer (a loop variable used so makes its
    iterable one too: `for opt in self.optimizers: opt.step()`)."""
    collector = _Collector()
    module.visit(collector)
    used = set(collector.used)
    for variable, sources in collector.loops.items():
        if use_key(variable) in used:
            used.update(sources)
    return frozenset(used)
