"""Which names a file uses as optimizers: evidence from use, not from what they are called.

A call known only by its name (`build_optimizer(model)`, `make_optim(net)`) is taken to build an
optimizer when what it returns is used as one somewhere in the file: stepped or zeroed, its
`param_groups` read or added to, handed to a scheduler, a gradient scaler or an optimizer wrapper, or
passed as an `optimizer=` argument. A helper that merely has "optim" in its name (`optim_context()`,
`optimal_sobol_indices()`, `_test_optimizer()`) and whose result is never used so is not one.

Names are compared by their last part, so `self.optimizer = build_optimizer(...)` in `__init__` is
confirmed by `trainer.optimizer.step()` in another method or class of the file. Read with Python's own
parser: one pass over a large file costs a few milliseconds, where a LibCST visit costs a second.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, FrozenSet, List, Optional, Set

from .. import catalog as cat
from ..syntax import python_tree

# Keywords under which a call receives an optimizer; the walker reads it too.
OPTIMIZER_KEYWORD = re.compile(cat.OPTIMIZER_KEYWORD)
_TAKES_OPTIMIZER = re.compile(cat.TAKES_OPTIMIZER_CALL)
_SCALER_RECEIVER = re.compile(cat.SCALER_RECEIVER)


def use_key(dotted: str) -> str:
    """`self.optimizer` and `trainer.optimizer` are one use key: `optimizer`."""
    return dotted.rsplit(".", 1)[-1]


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _root_of(node: ast.AST) -> Optional[str]:
    """`self.optimizers[0]` -> `self.optimizers`; a dotted name as it is."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return _dotted(node)


class _Collector:
    def __init__(self) -> None:
        self.used: Set[str] = set()
        self.alone: Set[str] = set()  # uses that make an optimizer of whatever the name
        self.handed: Set[str] = set()  # passed as an `optimizer=` argument
        self.methods: Dict[str, Set[str]] = {}  # use key -> the optimizer methods called on it
        self.loops: Dict[str, List[str]] = {}  # loop variable -> the iterables it walks

    def add(self, node: ast.AST, alone: bool = True, method: str = "") -> None:
        for element in node.elts if isinstance(node, (ast.List, ast.Tuple)) else ():
            self.add(element, alone, method)
        root = _root_of(node)
        if root is not None:
            key = use_key(root)
            self.used.add(key)
            if alone:
                self.alone.add(key)
            if method:
                self.methods.setdefault(key, set()).add(method)

    def attribute(self, node: ast.Attribute) -> None:
        if node.attr in cat.OPTIMIZER_USE_ATTRIBUTES:
            self.add(node.value)

    def call(self, node: ast.Call) -> None:
        func = node.func
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]
        if isinstance(func, ast.Attribute):
            receiver = _dotted(func.value) or ""
            if func.attr == cat.STEP and positional and _SCALER_RECEIVER.search(use_key(receiver) if receiver else ""):
                self.add(positional[0])  # `scaler.step(optimizer)`
            elif func.attr in cat.OPTIMIZER_USE_METHODS:
                self.add(func.value, func.attr in cat.OPTIMIZER_ONLY_METHODS, func.attr)
        # Handed to a call whose name says it takes an optimizer: a confirmation only (`step_scheduler(
        # lr_scheduler)` hands a scheduler), never an optimizer of another name.
        terminal = use_key(_dotted(func) or "")
        if terminal and _TAKES_OPTIMIZER.search(terminal):
            for arg in positional:
                self.add(arg, alone=False)
        elif terminal in cat.TAKES_OPTIMIZER_SECOND and len(positional) >= 2:
            self.add(positional[1], alone=False)  # `amp.initialize(model, optimizer)`
        for keyword in node.keywords:
            if keyword.arg is not None and OPTIMIZER_KEYWORD.match(keyword.arg):
                self.add(keyword.value, alone=False)
                root = _root_of(keyword.value)
                if root is not None:
                    self.handed.add(use_key(root))

    def alone_keys(self) -> Set[str]:
        """Names used as nothing but an optimizer is: a use only optimizers have, or methods that
        together only an optimizer has (`zero_grad()` and `step()`: a module has the one, an
        environment or a scheduler the other)."""
        together = {key for key, methods in self.methods.items() if cat.OPTIMIZER_METHODS_TOGETHER <= methods}
        return self.alone | together

    def loop(self, node: ast.For) -> None:
        target = _dotted(node.target)
        items = list(node.iter.elts) if isinstance(node.iter, (ast.List, ast.Tuple)) else [node.iter]
        for source in filter(None, map(_root_of, items)):
            if target is not None:
                self.loops.setdefault(target, []).append(use_key(source))


@dataclass(frozen=True)
class OptimizerUses:
    """What a file uses as optimizers, by use key: `names`, any use (it confirms a name that already
    says optimizer); `alone`, uses that make an optimizer of any name (`updater.zero_grad()` and
    `updater.step()`, `updater.param_groups`, `scaler.step(updater)`)."""

    names: FrozenSet[str] = frozenset()
    alone: FrozenSet[str] = frozenset()
    handed: FrozenSet[str] = frozenset()  # passed on as `optimizer=`: what the callee takes is one
    source: str = field(default="", compare=False, repr=False)

    def trains(self, key: str) -> FrozenSet[str]:
        """What a stepped name trains: the modules called in what a `.backward()` of the same function
        runs on (`self.student(batch).sum().backward(); self.optimizer.step()`: `optimizer` -> `student`);
        read on first need, once per text."""
        return _trained(self.source).get(key, frozenset())


def optimizer_uses(source: str) -> OptimizerUses:
    """The use keys of everything the program text uses as an optimizer (a loop variable used so makes
    its iterable one too: `for opt in self.optimizers: opt.step()`)."""
    try:
        tree = python_tree(source, keep=False)  # the file's own tree, kept since its syntax check
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return OptimizerUses()
    collector = _Collector()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            collector.call(node)
        elif isinstance(node, ast.Attribute):
            collector.attribute(node)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            collector.loop(node)
    used, alone = set(collector.used), collector.alone_keys()
    for variable, sources in collector.loops.items():
        if use_key(variable) in used:
            used.update(sources)
        if use_key(variable) in alone:
            alone.update(sources)
    return OptimizerUses(frozenset(used), frozenset(alone), frozenset(collector.handed), source)


@lru_cache(maxsize=4)
def _trained(source: str) -> Dict[str, FrozenSet[str]]:
    try:
        tree = python_tree(source, keep=False)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    trained: Dict[str, Set[str]] = {}
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for stepped, modules in _trained_in(function).items():
                trained.setdefault(stepped, set()).update(modules)
    return {key: frozenset(modules) for key, modules in trained.items()}


def _trained_in(function: ast.AST) -> Dict[str, Set[str]]:
    """For each name stepped in the function, the use keys of the callables called in what its
    `.backward()` calls run on, through the names assigned on the way (`loss = criterion(net(x), y)`)."""
    computed: Dict[str, Set[str]] = {}  # a local name -> the callables called in its value
    reached: Set[str] = set()
    stepped: Set[str] = set()
    nodes = list(ast.walk(function))
    assigned = [node for node in nodes if isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)]
    for _ in range(2):  # twice: a value may read a name assigned further down the walk
        for node in assigned:
            computed.setdefault(node.targets[0].id, set()).update(_called_in(node.value, computed))
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
            if node.func.attr == cat.BACKWARD:
                reached |= _called_in(node.func.value, computed)
            elif node.func.attr == cat.STEP and _dotted(node.func.value):
                stepped.add(use_key(_dotted(node.func.value)))
    return {key: reached for key in stepped} if reached else {}


def _called_in(node: ast.AST, computed: Dict[str, Set[str]]) -> Set[str]:
    called: Set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and _dotted(inner.func):
            called.add(use_key(_dotted(inner.func)))
        elif isinstance(inner, ast.Name) and inner.id in computed:
            called |= computed[inner.id]
    return called
