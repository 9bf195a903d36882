"""Python's own tree of a program text, made once for a text that several stages read: the
prefilter's tree stage, the syntax check before LibCST and the optimizer uses of the analysis each
parsed the same file (three `ast.parse` calls of every file analysed, a third of a LibCST parse for a
large module). Nothing here imports the rest of ddp-lint; readers must not change the tree.
"""
from __future__ import annotations

import ast
import warnings
from collections import OrderedDict
from typing import Tuple

# The last few texts kept, by identity (the text is kept with its tree, so an id is never reused
# while its entry lives): a file's stages ask about one text object in turn.
_TREES: "OrderedDict[int, Tuple[str, ast.Module]]" = OrderedDict()
_KEPT = 2


def python_tree(text: str, keep: bool = True) -> ast.Module:
    """`ast.parse(text)` without its warnings (invalid escapes are the file's business), the same tree
    for the same text object while it is among the last texts kept; raises as `ast.parse` does.
    `keep=False` reads a kept tree but keeps none of its own (a block of another module, which must
    not push the file being analysed out)."""
    entry = _TREES.get(id(text))
    if entry is not None and entry[0] is text:
        _TREES.move_to_end(id(text))
        return entry[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    if keep:
        _TREES[id(text)] = (text, tree)
        while len(_TREES) > _KEPT:
            _TREES.popitem(last=False)
    return tree


def forget() -> None:
    _TREES.clear()
