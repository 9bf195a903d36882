"""What a function reads out of its `**kwargs`: each constant key is an argument its callers pass by
name (`fit(model=net, optimizer=opt)` read as `kwargs["model"]`, `kwargs.get("optimizer")`).

A key is followed like a keyword-only parameter of that name, except what the body tells otherwise:
a key that is called (`kwargs["optimizer"](params)`, or a name bound from it) is a factory, and one
spread with `**` (`AdamW(params, **kwargs["optimizer"])`) is a dict of settings.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

import libcst as cst

from .blocks import node_fields


@dataclass
class KeyUse:
    called: bool = False
    spread: bool = False


def key_of(node: cst.BaseExpression, kwargs: str) -> Optional[str]:
    """`kwargs["model"]`, `kwargs.get("model", ...)`, `kwargs.pop("model")`: the constant key read."""
    if isinstance(node, cst.Subscript) and _is_name(node.value, kwargs) and len(node.slice) == 1:
        index = node.slice[0].slice
        return _string(index.value) if isinstance(index, cst.Index) else None
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _is_name(node.func.value, kwargs)
            and node.func.attr.value in ("get", "pop") and node.args and node.args[0].keyword is None):
        return _string(node.args[0].value)
    return None


def read_kwargs(function: cst.FunctionDef, kwargs: str) -> Tuple[Dict[str, KeyUse], Optional[Tuple[cst.Call, ...]]]:
    """In one walk of the body: the keys it reads, in source order, with how it uses them; and the
    calls it hands its whole `**kwargs` to (`super().__init__(model, **kwargs)`) when that and
    constant-key reads are all it does with the name, None when it does anything else with it (stores
    it, iterates it, reads a computed key: then any keyword may be read). Read by walking the nodes'
    fields: a LibCST visitor rebuilds every node it passes, and most functions with `**kwargs` (every
    `forward(self, *args, **kwargs)` of a large library) read no constant key at all."""
    keys: Dict[str, KeyUse] = {}
    aliases: Dict[str, str] = {}  # a local name bound from a key (`opt = kwargs["optimizer"]`)
    spreads: List[cst.Call] = []
    accounted: set = set()  # the uses of the name that are key reads or whole spreads
    names: List[cst.Name] = []
    for node in _nodes(function.body):
        if isinstance(node, cst.Name):
            if node.value == kwargs:
                names.append(node)
        elif isinstance(node, cst.Assign):
            key = key_of(node.value, kwargs)
            for target in node.targets:
                if key is not None and isinstance(target.target, cst.Name):
                    aliases[target.target.value] = key
        elif isinstance(node, cst.Comparison) and _string(node.left) is not None:
            # `"class_weight" in kwargs`: a constant key asked for
            accounted.update(id(c.comparator) for c in node.comparisons
                             if isinstance(c.operator, (cst.In, cst.NotIn)) and _is_name(c.comparator, kwargs))
        elif isinstance(node, (cst.Subscript, cst.Call)):
            key = key_of(node, kwargs)
            if key is not None:
                keys.setdefault(key, KeyUse())
                accounted.add(id(node.value if isinstance(node, cst.Subscript) else node.func.value))
            if isinstance(node, cst.Call):
                _note_call(node, kwargs, aliases, keys)
                for arg in node.args:
                    if arg.star == "**" and _is_name(arg.value, kwargs):
                        accounted.add(id(arg.value))
                        spreads.append(node)
    whole = None if any(id(name) not in accounted for name in names) else tuple(spreads)
    return {key: use for key, use in keys.items() if key.isidentifier()}, whole


def _note_call(node: cst.Call, kwargs: str, aliases: Dict[str, str], keys: Dict[str, KeyUse]) -> None:
    called = key_of(node.func, kwargs) or (aliases.get(node.func.value) if isinstance(node.func, cst.Name) else None)
    if called is not None:
        keys.setdefault(called, KeyUse()).called = True
    for arg in node.args:
        spread = arg.star == "**" and (key_of(arg.value, kwargs) or (
            aliases.get(arg.value.value) if isinstance(arg.value, cst.Name) else None))
        if spread:
            keys.setdefault(spread, KeyUse()).spread = True


def _nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under `root` in source order, nested definitions included (their reads of the same
    `kwargs` are the closure's), without rebuilding any."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        children = []
        for name in node_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                children.append(value)
            elif isinstance(value, (tuple, list)):
                children.extend(item for item in value if isinstance(item, cst.CSTNode))
        stack.extend(reversed(children))



def _is_name(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _string(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.SimpleString) and node.prefix.lower() in ("", "u"):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    return None
