"""The import graph of the ddp_lint package, every import counted (module level and inside
functions), with importing `a.b.c` counting as importing the packages `a.b` and `a` too.

    python benchmarks/import_graph.py            # cycles and imports that climb a layer; exit 1 if any
    python benchmarks/import_graph.py --lines    # and each module's line count

No import circles, and no import from a lower layer to a higher one (`LAYERS`, top first): the path
from the command line to a printed finding only goes down. `tests/test_import_layers.py` asserts both.
"""
from __future__ import annotations

import ast
import os
import sys
from typing import Dict, List, Optional, Set, Tuple

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ddp_lint")

# Top first. A module may import its own layer and those below, never one above; a module belongs to
# the layer of the longest name here that it starts with (a package stands for its modules).
LAYERS: List[Tuple[str, Tuple[str, ...]]] = [
    ("entry points", ("__main__", "cli", "frontends", "runtime", "watch", "dev")),
    ("output formats", ("report",)),
    ("one run", ("parallel", "cache", "pipeline")),
    ("fix application", ("fixer",)),
    ("project index", ("project",)),
    ("engine", ("engine",)),
    ("inputs and settings", ("workspace", "config", "settings", "prefilter", "parsing")),
    ("rules", ("rules",)),
    ("fix planning", ("planning",)),
    ("analysis: module summaries", ("analysis.module",)),
    ("analysis: the walker's state and entry points", ("analysis.walker",)),
    ("analysis: project calls replayed", ("analysis.replay",)),
    ("analysis: what calls do", ("analysis.effects",)),
    ("analysis: holders", ("analysis.holders",)),
    ("analysis: names and expressions", ("analysis.bindings",)),
    ("analysis: paths", ("analysis.flow",)),
    ("analysis: summaries", ("analysis.summary",)),
    ("analysis: abstract objects", ("analysis.heap",)),
    ("analysis: events, stories and syntax facts", ("analysis",)),
    ("base", ("catalog", "findings", "lines", "syntax", "suppression", "noqa_edits", "paths", "documents", "")),
]


def modules() -> Dict[str, str]:
    found = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                found[relative[: -len(".__init__")] if relative.endswith(".__init__") else relative] = path
    return found


def imports(name: str, path: str, known: Set[str]) -> Set[str]:
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    targets: Set[str] = set()
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bases = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            bases = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for base in bases:
            parts = base.split(".")
            for i in range(1, len(parts) + 1):
                candidate = ".".join(parts[:i])
                if candidate in known and candidate != name:
                    targets.add(candidate)
    return targets


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def layer_of(module: str) -> Optional[int]:
    """The index in LAYERS of a module of the package (`ddp_lint.x.y`), by its longest listed prefix."""
    name = module[len("ddp_lint."):] if module.startswith("ddp_lint.") else ""
    best, best_length = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".") or prefix == "") and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    return best


def graph() -> Dict[str, Set[str]]:
    known = modules()
    # a package's own __init__ importing its submodules is how a package is built, not a circle
    return {name: {t for t in imports(name, path, set(known)) if not name.startswith(t + ".")}
            for name, path in known.items()}


def climbing(edges: Dict[str, Set[str]]) -> List[str]:
    """Every import from a module to one in a higher layer, as `a (layer) -> b (layer)`."""
    found = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            low, high = layer_of(source), layer_of(target)
            if high < low:
                found.append(f"{source} ({LAYERS[low][0]}) -> {target} ({LAYERS[high][0]})")
    return found


def main() -> int:
    known = modules()
    edges = graph()
    found = cycles(edges)
    for component in found:
        print("cycle:", " <-> ".join(component))
    upward = climbing(edges)
    for line in upward:
        print("climbs a layer:", line)
    if "--lines" in sys.argv:
        for name, path in sorted(known.items()):
            print(f"{sum(1 for _ in open(path, encoding='utf-8')):6d}  {name}")
    print(f"{len(known)} modules, {len(found)} import cycles, {len(upward)} imports that climb a layer")
    return 1 if found or upward else 0


if __name__ == "__main__":
    sys.exit(main())
