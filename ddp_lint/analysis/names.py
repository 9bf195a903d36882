"""Cheap name resolution: dotted names of expressions and a per-file import table.

LibCST's QualifiedNameProvider costs several times a bare parse; a dictionary filled from the
import statements answers the only question the rules ask ("is this callee torch.optim.Adam?").
"""
from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, Iterator, Optional, Tuple

import libcst as cst

from .blocks import expression_children


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` for a chain of names and attributes, None for anything else (calls, subscripts).
    `getattr(a, "b")` with a literal name is `a.b`: the same attribute, read another way."""
    parts = []
    while True:
        if isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        elif isinstance(node, cst.Call) and _is_literal_getattr(node):
            parts.append(node.args[1].value.evaluated_value)
            node = node.args[0].value
        else:
            break
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _is_literal_getattr(call: cst.Call) -> bool:
    """`getattr(obj, "name")`: two positional arguments, the second a plain string that is an
    identifier (with a default, the attribute may be missing and the default is read instead)."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "getattr" and len(call.args) == 2):
        return False
    obj, name = call.args
    if obj.keyword is not None or obj.star or name.keyword is not None or name.star:
        return False
    literal = name.value
    return (isinstance(literal, cst.SimpleString) and not any(p in literal.prefix.lower() for p in "fb")
            and isinstance(literal.evaluated_value, str) and literal.evaluated_value.isidentifier())


# The name an object built and called in one expression (`Agent(net).setup()`) goes by for that call, in
# the walk only: one no program spells; what is kept under it is shown as the code spells the object.
FRESH_RECEIVER = "__ddp_lint_built__"


def code_text(node: cst.CSTNode) -> str:
    """The node's code as a message quotes it: as written, on one line. A condition written over
    several lines (`if (\\n    a\\n    and b\\n):`) loses its line breaks, indentation and comments,
    and keeps its spelling otherwise (quotes, brackets, spacing within a line)."""
    text = cst.Module(body=[]).code_for_node(node).strip()
    return text if "\n" not in text else _one_line(text)


def found_once(text: str, node) -> Optional[Tuple[int, int]]:
    """(line, 0-based column) where a node's code occurs once in a module's text; None when it is not
    there or is there more than once (which one is meant is unknown). A node's code printed alone lacks
    its block's indentation on its continuation lines, so the whitespace between tokens matches loosely."""
    code = cst.Module(body=[]).code_for_node(node)
    found = list(re.finditer(r"\s*".join(map(re.escape, code.split())), text))
    if len(found) != 1:
        return None
    at = found[0].start()
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1)


def _one_line(text: str) -> str:
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                  if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER,
                                    tokenize.INDENT, tokenize.DEDENT)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return " ".join(text.split())
    lines = text.splitlines()
    pieces = []
    for previous, token in zip([None] + tokens, tokens):
        if previous is not None:
            if previous.end[0] == token.start[0]:
                pieces.append(lines[token.start[0] - 1][previous.end[1]:token.start[1]])
            elif previous.string not in "([{" and token.string not in ")]},":
                pieces.append(" ")
        pieces.append(token.string)
    return "".join(pieces)


def operands(test: cst.BaseExpression, operator: type) -> Iterator[cst.BaseExpression]:
    """The operands of a chain of one boolean operator (`cst.And` or `cst.Or`), brackets looked
    through: `a and (b and c)` gives `a`, `b`, `c`; anything else is its own single operand."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, operator):
        yield from operands(test.left, operator)
        yield from operands(test.right, operator)
    else:
        yield test


def target_elements(target: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The single targets of an assignment, loop or `del` target: `a, (b, *c)` gives `a`, `b`, `c`."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from target_elements(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from target_elements(target.value)
    else:
        yield target


def _module_path(node: cst.BaseExpression) -> str:
    return dotted_name(node) or ""


_IMPORT_MODULE = "importlib.import_module"


class ImportTable:
    """Maps local names to the qualified names they were imported as."""

    def __init__(self) -> None:
        self._names: Dict[str, str] = {}
        self._relative: Dict[str, str] = {}  # `from .utils import f as g`: g -> `.utils.f` (the project's, never torch's)
        self._stars: Tuple[str, ...] = ()  # `from .utils import *`: `.utils`

    def copy(self) -> "ImportTable":
        table = ImportTable()
        table._names = dict(self._names)
        table._relative = dict(self._relative)
        table._stars = self._stars
        return table

    def add(self, statement: cst.CSTNode) -> None:
        if isinstance(statement, cst.Import):
            for alias in statement.names:
                full = _module_path(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self._names[alias.asname.name.value] = full
                else:
                    root = full.split(".", 1)[0]
                    self._names[root] = root
        elif isinstance(statement, cst.ImportFrom) and isinstance(statement.names, cst.ImportStar):
            module = _module_path(statement.module) if statement.module is not None else ""
            self._stars += ("." * len(statement.relative) + module,)
        elif isinstance(statement, cst.ImportFrom):
            module = _module_path(statement.module) if statement.module is not None else ""
            if statement.relative:
                # A project-local module: its names are not PyTorch's, but the project index can follow them.
                dots = "." * len(statement.relative)
                for alias in statement.names:
                    name = _module_path(alias.name)
                    local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
                    self._relative[local] = f"{dots}{module}.{name}" if module else f"{dots}{name}"
                return
            for alias in statement.names:
                name = _module_path(alias.name)
                local = name
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    local = alias.asname.name.value
                self._names[local] = f"{module}.{name}" if module else name

    def note_module_import(self, statement: cst.Assign) -> None:
        """`local = importlib.import_module("pkg.mod")`, a literal absolute name: as `import pkg.mod as
        local` (a relative name needs its `package=`, which only the run knows)."""
        value = statement.value
        if not (isinstance(value, cst.Call) and len(statement.targets) == 1 and len(value.args) == 1
                and isinstance(statement.targets[0].target, cst.Name) and value.args[0].keyword is None):
            return
        callee = dotted_name(value.func)
        literal = value.args[0].value
        if (callee is not None and self.qualify(callee) == _IMPORT_MODULE and isinstance(literal, cst.SimpleString)
                and isinstance(literal.evaluated_value, str)
                and all(part.isidentifier() for part in literal.evaluated_value.split("."))):
            self._names[statement.targets[0].target.value] = literal.evaluated_value
            self._relative.pop(statement.targets[0].target.value, None)

    def qualify(self, dotted: str) -> str:
        """`optim.Adam` -> `torch.optim.Adam` when `import torch.optim as optim` was seen."""
        head, _, rest = dotted.partition(".")
        target = self._names.get(head)
        if target is None:
            return dotted
        return f"{target}.{rest}" if rest else target

    def binds(self, name: str) -> bool:
        return name in self._names

    def starred(self, dotted: str) -> Tuple[str, ...]:
        """The full names a name no import binds may have through this module's star imports
        (`from .distiller_utils import *` then `AbstractDistiller`), in import order."""
        head = dotted.partition(".")[0]
        if head in self._names or head in self._relative:
            return ()
        return tuple(f"{module}.{dotted}" for module in self._stars)

    def imported_name(self, dotted: str) -> Optional[str]:
        """The full name a call reaches through an import (`..utils.smart_DDP`, `pkg.trainer.Trainer`),
        relative names included; None for a name no import binds."""
        head, _, rest = dotted.partition(".")
        target = self._names.get(head) or self._relative.get(head)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target


def callee_name(func: cst.BaseExpression) -> str:
    dotted = dotted_name(func)
    while dotted is None and isinstance(func, (cst.Call, cst.Subscript)):
        func = func.func if isinstance(func, cst.Call) else func.value
        dotted = dotted_name(func)
    return dotted or "call"


def plain_text(node: cst.BaseExpression) -> str:
    dotted = dotted_name(node)
    if dotted is not None:
        return dotted
    if isinstance(node, cst.SimpleString):
        return node.value
    return cst.Module(body=[]).code_for_node(node)


def keyword_is_true(call: cst.Call, keyword: str) -> bool:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return False


def dotted_names(node: cst.CSTNode) -> Iterator[str]:
    """Every name and attribute chain read in an expression (`self.optimizer` in `self.optimizer is
    not None`), outermost chains only."""
    dotted = dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
    if dotted is not None:
        yield dotted
        return
    for child in expression_children(node):
        yield from dotted_names(child)
