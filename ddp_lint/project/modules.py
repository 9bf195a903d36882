"""Where an import inside the checked project leads: module names to files and back.

Python finds `import pkg.mod` on `sys.path`; for code that is checked rather than run, that path is
the folder a script sits in (Python puts it first), the folder above the file's top package, the
configuration's folder, its `src/`, and the `src = [...]` folders of `[tool.ddp-lint]` (as ruff's
`src` setting). Only files that exist are answers: a name that leads nowhere is outside the project
(torch, a library) and the catalog speaks for it.
"""
from __future__ import annotations

import os
from functools import lru_cache
from typing import Dict, Iterable, List, Optional, Tuple


@lru_cache(maxsize=None)
def _isfile(path: str) -> bool:
    return os.path.isfile(path)


@lru_cache(maxsize=None)
def package_root(path: str) -> Tuple[str, str]:
    """(the folder above the file's top package, the file's dotted module name from there)."""
    folder, name = os.path.split(os.path.abspath(path))
    parts = [] if name == "__init__.py" else [os.path.splitext(name)[0]]
    while _isfile(os.path.join(folder, "__init__.py")):
        folder, package = os.path.split(folder)
        parts.insert(0, package)
        if not package:
            break
    return folder, ".".join(parts)


class Resolver:
    """Resolves dotted names seen in one file to (file, name inside that module) pairs."""

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self.roots = [os.path.abspath(r) for r in roots]
        self._files: Dict[Tuple[str, str], Optional[str]] = {}

    def roots_for(self, importer: str) -> List[str]:
        folder = os.path.dirname(os.path.abspath(importer))
        top, _ = package_root(importer)
        ordered = [folder, top] + self.roots
        seen, result = set(), []
        for root in ordered:
            if root not in seen:
                seen.add(root)
                result.append(root)
        return result

    def absolute(self, dotted: str, importer: str) -> str:
        """`..utils.f` seen in `pkg/sub/train.py` is `pkg.utils.f`; absolute names stay as they are."""
        if not dotted.startswith("."):
            return dotted
        level = len(dotted) - len(dotted.lstrip("."))
        rest = dotted[level:]
        _, module = package_root(importer)
        package = module.split(".")
        if os.path.basename(importer) != "__init__.py":
            package = package[:-1]
        if level - 1 > len(package):
            return rest
        base = package[: len(package) - (level - 1)]
        return ".".join(base + ([rest] if rest else []))

    def module_file(self, module: str, importer: str) -> Optional[str]:
        # the roots depend on the importer's folder alone: one answer per folder (a large tree asks the
        # same names from each of its files)
        key = (module, os.path.dirname(os.path.abspath(importer)))
        if key not in self._files:
            self._files[key] = self._module_file(module, importer)
        return self._files[key]

    def _module_file(self, module: str, importer: str) -> Optional[str]:
        if not module or not all(part.isidentifier() for part in module.split(".")):
            return None
        relative = module.replace(".", os.sep)
        for root in self.roots_for(importer):
            for candidate in (os.path.join(root, relative + ".py"), os.path.join(root, relative, "__init__.py")):
                if _isfile(candidate):
                    return candidate
        return None

    def resolve(self, dotted: str, importer: str) -> Optional[Tuple[str, str]]:
        """The longest prefix of `dotted` that is a project module, and the rest (`Trainer.fit`)."""
        name = self.absolute(dotted, importer)
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            path = self.module_file(".".join(parts[:cut]), importer)
            if path is not None and os.path.abspath(path) != os.path.abspath(importer):
                return path, ".".join(parts[cut:])
        return None
