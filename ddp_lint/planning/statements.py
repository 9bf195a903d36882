"""Which names a statement reads and binds, keyed the way the analysis keys handles (`x`, `self.x`)."""
from __future__ import annotations

from typing import Set, Tuple

import libcst as cst

from ..analysis.names import dotted_name


def key_of(dotted: str) -> str:
    parts = dotted.split(".")
    return ".".join(parts[:2]) if parts[0] == "self" and len(parts) > 1 else parts[0]


class _Collector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.reads: Set[str] = set()
        self.binds: Set[str] = set()

    def _bind(self, target: cst.CSTNode) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value)
        else:
            dotted = dotted_name(target)
            if dotted is not None and (dotted.count(".") == 0 or (dotted.startswith("self.") and dotted.count(".") == 1)):
                self.binds.add(dotted)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            dotted = dotted_name(node.name)
            if dotted:
                self.binds.add(dotted.split(".")[0])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.binds.add(node.name.value)
        # Its body runs later, not here; its decorators and defaults run now.
        for decorator in node.decorators:
            decorator.visit(self)
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is not None:
                param.default.visit(self)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        """A class body runs where it is defined (its methods' bodies do not); its own names stay its own."""
        self.binds.add(node.name.value)
        for part in (*node.decorators, *node.bases, *node.keywords):
            part.visit(self)
        inner = _Collector()
        node.body.visit(inner)
        self.reads.update(inner.reads - inner.binds)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)  # the keyword itself is not a name this code reads
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        dotted = dotted_name(node)
        if dotted is not None:
            self.reads.add(key_of(dotted))
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        self.reads.add(node.value)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        params = node.params
        own = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        own.update(p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param))
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is not None:
                param.default.visit(self)  # defaults are read where the lambda is made
        self._read_except(node.body, own)
        return False

    def _comprehension(self, node) -> bool:
        """A comprehension's targets are its own names (Python 3): reading them reads nothing outside,
        and binding them rebinds nothing outside."""
        inner = _Collector()
        clause = node.for_in
        own: Set[str] = set()
        while clause is not None:
            inner._bind(clause.target)
            clause = clause.inner_for_in
        own = set(inner.binds)
        self._read_except(node, own, skip_root=True)
        return False

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def _read_except(self, node: cst.CSTNode, own: Set[str], skip_root: bool = False) -> None:
        inner = _Collector()
        if skip_root:
            for child in node.children:
                child.visit(inner)
        else:
            node.visit(inner)
        self.reads.update(name for name in inner.reads if name.split(".")[0] not in own)
        self.binds.update(name for name in inner.binds if name.split(".")[0] not in own)


def reads_and_binds(node: cst.CSTNode) -> Tuple[Set[str], Set[str]]:
    collector = _Collector()
    node.visit(collector)
    return collector.reads, collector.binds
