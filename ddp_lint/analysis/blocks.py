"""The statement blocks a compound statement holds: shared by the scope splitter and the fix planner;
and the fields of a node that can hold program nodes, for the readers that walk them."""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Iterator, Sequence, Tuple

import libcst as cst


def suite_body(suite: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    return suite.body if isinstance(suite, cst.IndentedBlock) else ()


def suites(statement: cst.CSTNode) -> Iterator[cst.BaseSuite]:
    """Every block of `if/elif/else`, `for/while ... else`, `try/except/else/finally`, `with`, `match`."""
    body = getattr(statement, "body", None)
    if isinstance(body, cst.BaseSuite):
        yield body
    for attribute in ("orelse", "finalbody"):
        part = getattr(statement, attribute, None)
        if isinstance(part, cst.If):
            yield from suites(part)
        elif part is not None and isinstance(getattr(part, "body", None), cst.BaseSuite):
            yield part.body
    for handler in getattr(statement, "handlers", ()):
        yield handler.body
    for case in getattr(statement, "cases", ()):
        yield case.body


# Fields that hold only layout or punctuation (spaces, comments, blank lines, parentheses, commas,
# operators): never a node a reader of the program needs.
_LAYOUT_PARTS = ("whitespace", "lpar", "rpar", "comma", "semicolon", "header", "footer", "leading_lines",
                 "lines_after_decorators", "newline", "indent")
_PUNCTUATION = frozenset({"dot", "operator", "equal", "colon"})


@lru_cache(maxsize=None)
def node_fields(kind: type) -> Tuple[str, ...]:
    """The fields of a LibCST node type that may hold program nodes, to read directly: LibCST's
    `children` and its visitors rebuild the nodes they pass and cost as much as the parse."""
    return tuple(f.name for f in dataclasses.fields(kind)
                 if f.name not in _PUNCTUATION and not any(part in f.name for part in _LAYOUT_PARTS))


_NOT_EXPRESSIONS = (
    cst.BaseParenthesizableWhitespace, cst.BaseSuite, cst.LeftParen, cst.RightParen, cst.Comma, cst.Dot,
    cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.AssignEqual, cst.Colon,
    cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Semicolon,
)


def expression_children(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """The direct sub-expressions of a node, looking through Arg/Element/CompFor wrappers.

    Reads the node's fields directly: LibCST's `children` rebuilds nodes and costs as much as the parse.
    """
    for name in node_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield from _expressions_in(value)
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    yield from _expressions_in(item)


def _expressions_in(child: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    if isinstance(child, cst.Arg):
        yield child.value
    elif isinstance(child, cst.Lambda):
        return
    elif isinstance(child, cst.BaseExpression):
        yield child
    elif not isinstance(child, _NOT_EXPRESSIONS):
        yield from expression_children(child)
