"""Line references inside messages, rendered for each document when a finding leaves the pipeline.

A rule, the fix planner or the parser names another line of the program with `line_ref(12)`; the
pipeline renders it with the document's map (`line 12` in a `.py` file, `line 2 of cell 3` in a
notebook). The marker reads as `line 12` even if it were ever printed unrendered.
"""
from __future__ import annotations

import re
from typing import Callable, Optional, Tuple

_MARK = "\u2063"  # INVISIBLE SEPARATOR: never in a message otherwise
_REFERENCE = re.compile(rf"line (\d+){_MARK}")


def line_ref(line: int) -> str:
    return f"line {line}{_MARK}"


Place = Callable[[int], Tuple[Optional[int], int]]


def render(text: str, place: Place) -> str:
    def one(match: "re.Match[str]") -> str:
        cell, line = place(int(match.group(1)))
        return f"line {line} of cell {cell}" if cell is not None else f"line {line}"

    return _REFERENCE.sub(one, text) if _MARK in text else text


class LineNumber(int):
    """A program line as the engine hands it to rules and the fix planner: it compares and counts
    as an int, and formatted into a message (`f"on line {line_of(node)}"`) it becomes a reference
    the document renders, so no rule has to know whether it reports into a notebook."""

    def __str__(self) -> str:
        return f"{int(self)}{_MARK}"

    def __format__(self, spec: str) -> str:
        return str(self) if not spec else format(int(self), spec)
