"""Types from declarations through a project's generic aliases: `Instance = Union[T, Dict[str, Any]]`
makes `optimizer: Optional[Instance[Optimizer]]` an annotation that may name an optimizer, as
`Optional[Union[Optimizer, Dict[str, Any]]]` does. Generic Python typing, read from a module's text
(the alias is a module-level assignment of a subscripted type; its type variables are the module's
`TypeVar(...)` names); a class (`Lazy[Optimizer]`, a factory) is no alias and stays as written.
"""
from __future__ import annotations

import ast
import re
from typing import Callable, Optional, Tuple

Alias = Tuple[str, Tuple[str, ...]]  # (the right-hand side, the module's type variables)

_TYPEVAR = re.compile(r"^(\w+)\s*=\s*(?:\w+\.)*TypeVar\(", re.MULTILINE)
# `Optional[...]`, `List[...]`: generics of the typing module, never a project's alias
_TYPING_GENERICS = frozenset(
    "Optional Union List Tuple Sequence Iterable Iterator Dict Mapping Set FrozenSet Type Callable "
    "Literal Annotated ClassVar Final list tuple dict set frozenset type".split())


def alias_in(text: str, name: str) -> Optional[Alias]:
    """The module-level generic alias `name` of a module's text, if it defines one."""
    match = re.search(rf"^{re.escape(name)}\s*(?::[^=\n]*)?=\s*(.+)$", text, re.MULTILINE)
    if match is None:
        return None
    source, end = match.group(1), match.end()
    while source.count("[") > source.count("]") and end < len(text):  # written over several lines
        following = text.find("\n", end + 1)
        following = len(text) if following == -1 else following
        source, end = source + " " + text[end + 1:following].strip(), following
    try:
        value = ast.parse(source.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(value, ast.Subscript):
        return None
    return ast.unparse(value), tuple(_TYPEVAR.findall(text))


def expand(annotation: str, lookup: Callable[[str], Optional[Alias]]) -> str:
    """The annotation with each subscripted alias replaced by what it stands for, its type variables
    by the arguments given (in the order they first appear); unchanged when none is found."""
    if "[" not in annotation:
        return annotation
    try:
        tree = ast.parse(annotation.strip().strip("\"'"), mode="eval")
    except SyntaxError:
        return annotation
    changed = []

    class Expand(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            self.generic_visit(node)
            head = ast.unparse(node.value)
            if head.rsplit(".", 1)[-1] in _TYPING_GENERICS:
                return node
            found = lookup(head)
            if found is None:
                return node
            value = ast.parse(found[0], mode="eval").body
            free = list(dict.fromkeys(n.id for n in ast.walk(value) if isinstance(n, ast.Name) and n.id in found[1]))
            given = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            mapping = dict(zip(free, given))
            changed.append(head)
            return _Substitute(mapping).visit(value)

    expanded = Expand().visit(tree)
    return ast.unparse(expanded) if changed else annotation


class _Substitute(ast.NodeTransformer):
    def __init__(self, mapping) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.mapping.get(node.id, node)
