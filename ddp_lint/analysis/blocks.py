"""The statement blocks a compound statement holds: shared by the scope splitter and the fix planner."""
from __future__ import annotations

from typing import Iterator, Sequence

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
