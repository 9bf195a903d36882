"""Python's own tree of a program text, made once for a text that several stages read: the
prefilter's tree stage, the syntax check before LibCST and the optimizer uses of the analysis each
parsed the same file (three `ast.parse` calls of every file analysed, a third of a LibCST parse for a
large module). Nothing here imports the rest of ddp-lint; readers must not change the tree.
"""
from __future__ import annotations

import ast
import warnings
from collections import OrderedDict
from typing import Dict, Iterable, List, Optional, Tuple

# Names every module sees without binding them (`len`, `print`): a call of one is never a project's.
BUILTIN_NAMES = frozenset(dir(__import__("builtins")))


def _standard_library_on_disk() -> frozenset:
    """The standard library's top-level modules as the interpreter's own folders hold them: its built-in
    modules, and the modules and packages of its library folder and extension folder, never its
    `site-packages`. For Python 3.9, which has no `sys.stdlib_module_names`."""
    import os
    import sys
    import sysconfig

    found = set(sys.builtin_module_names)
    library = sysconfig.get_paths()["stdlib"]
    for folder in (library, os.path.join(library, "lib-dynload")):
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            name = entry.split(".", 1)[0]
            if name.isidentifier() and (entry.endswith((".py", ".so", ".pyd"))
                                        or os.path.isfile(os.path.join(folder, entry, "__init__.py"))):
                found.add(name)
    return frozenset(found)


# The standard library's top-level modules: none of their classes is a PyTorch module (`argparse.Namespace`).
STANDARD_LIBRARY = frozenset(getattr(__import__("sys"), "stdlib_module_names", ())) or _standard_library_on_disk()

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


# Fields that never hold a node worth visiting: `ctx` is a Load/Store singleton under every name,
# the others hold identifiers and constants, or `alias` nodes that the prefilter reads from their
# import. So a list field holds only nodes (or None, for a `**` entry of a dict display). Skipping
# them is most of why `walk` beats `ast.walk`, which reads every field of every node through two
# generators: 0.62 s against 0.33 s for PyTorch's 133 token-stage files.
_LEAF_FIELDS = frozenset({"ctx", "id", "attr", "arg", "name", "module", "level", "kind", "type_comment",
                          "is_async", "simple", "conversion", "names", "kwd_attrs", "rest"})
_CHILD_FIELDS: Dict[type, tuple] = {}


def walk(root: ast.AST, stop: frozenset = frozenset()) -> Iterable[ast.AST]:
    """Every node under `root`, root included, in no particular order (its readers only collect);
    a node whose type is in `stop` is yielded but not entered."""
    stack: List[Optional[ast.AST]] = [root]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        yield node
        kind = type(node)
        if kind in stop:
            continue
        fields = _CHILD_FIELDS.get(kind)
        if fields is None:
            fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in _LEAF_FIELDS)
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                stack.extend(value)
            elif isinstance(value, ast.AST):
                stack.append(value)
