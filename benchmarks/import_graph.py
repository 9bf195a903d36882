"""The import graph of the ddp_lint package, every import counted (module level and inside
functions), with importing `a.b.c` counting as importing the packages `a.b` and `a` too.

    python benchmarks/import_graph.py            # cycles (strongly connected components), exit 1 if any
    python benchmarks/import_graph.py --lines    # and each module's line count

Used for the pipeline issue's evidence: no import circles, and the path from the command line to a
printed finding only goes down.
"""
from __future__ import annotations

import ast
import os
import sys
from typing import Dict, List, Set

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ddp_lint")


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


def main() -> int:
    known = modules()
    # a package's own __init__ importing its submodules is how a package is built, not a circle
    graph = {name: {t for t in imports(name, path, set(known)) if not name.startswith(t + ".")}
             for name, path in known.items()}
    found = cycles(graph)
    for component in found:
        print("cycle:", " <-> ".join(component))
    if "--lines" in sys.argv:
        for name, path in sorted(known.items()):
            print(f"{sum(1 for _ in open(path, encoding='utf-8')):6d}  {name}")
    print(f"{len(known)} modules, {len(found)} import cycles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
