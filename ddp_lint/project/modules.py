"""Where an import inside the checked project leads: module names to files and back.

Python finds `import pkg.mod` on `sys.path`; for code that is checked rather than run, that path is
the folder a script sits in (Python puts it first), the folder above the file's top package, the
nearest folder above the file that its packaging marks as the project's (`pyproject.toml`,
`setup.py`, `setup.cfg`: where it is installed or run from, whichever folder the check starts in),
the configuration's folder, its `src/`, and the `src = [...]` folders of `[tool.ddp-lint]` (as
ruff's `src` setting). Only files that exist are answers: a name that leads nowhere is outside the project
(torch, a library) and the catalog speaks for it.
"""
from __future__ import annotations

import os
from functools import lru_cache
from typing import Dict, Iterable, Iterator, List, Optional, Tuple


@lru_cache(maxsize=None)
def _isfile(path: str) -> bool:
    return os.path.isfile(path)


@lru_cache(maxsize=None)
def _holds(root: str, name: str) -> bool:
    """Whether `root` has a module or package called `name` (every candidate path starts there)."""
    return os.path.isdir(os.path.join(root, name)) or _isfile(os.path.join(root, name + ".py"))


@lru_cache(maxsize=None)
def package_root(path: str) -> Tuple[str, str]:
    """(the folder above the file's top package, the file's dotted module name from there). A folder
    whose name is no identifier is no package, whatever `__init__.py` it holds (a clone's
    `my-project/__init__.py`): nothing can import it, and scripts run from it import its packages."""
    folder, name = os.path.split(os.path.abspath(path))
    parts = [] if name == "__init__.py" else [os.path.splitext(name)[0]]
    while _isfile(os.path.join(folder, "__init__.py")) and os.path.basename(folder).isidentifier():
        folder, package = os.path.split(folder)
        parts.insert(0, package)
        if not package:
            break
    return folder, ".".join(parts)


@lru_cache(maxsize=None)
def _namespace_of(folder: str) -> Tuple[str, str]:
    """(the name of the folder above a folder's top package, that folder's parent)."""
    top, _ = package_root(os.path.join(folder, "__init__.py"))
    return os.path.basename(top), os.path.dirname(top)


_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")


@lru_cache(maxsize=None)
def _marked_project(folder: str) -> Optional[str]:
    """The nearest folder at or above `folder` that holds a packaging file, or None."""
    if any(_isfile(os.path.join(folder, marker)) for marker in _PROJECT_MARKERS):
        return folder
    parent = os.path.dirname(folder)
    return None if parent == folder else _marked_project(parent)


class Resolver:
    """Resolves dotted names seen in one file to (file, name inside that module) pairs."""

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self.roots = [os.path.abspath(r) for r in roots]
        self._files: Dict[Tuple[str, Tuple[str, ...]], Optional[str]] = {}
        # (absolute name, its roots) -> its longest prefix that is a module, and the rest
        self._first: Dict[Tuple[str, Tuple[str, ...]], Optional[Tuple[str, str]]] = {}

    def roots_for(self, importer: str) -> List[str]:
        return list(self._roots_of(os.path.dirname(os.path.abspath(importer))))

    @lru_cache(maxsize=None)
    def _roots_of(self, folder: str) -> Tuple[str, ...]:
        top, _ = package_root(os.path.join(folder, "__init__.py"))  # the top depends on the folder alone
        marked = _marked_project(folder)
        ordered = [folder, top] + ([marked] if marked else []) + self.roots
        seen, result = set(), []
        for root in ordered:
            if root not in seen:
                seen.add(root)
                result.append(root)
        return tuple(result)

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
        roots = self._roots_holding(os.path.dirname(os.path.abspath(importer)), module.split(".", 1)[0])
        return self._module_in(module, roots)

    @lru_cache(maxsize=None)
    def _roots_holding(self, folder: str, first: str) -> Tuple[str, ...]:
        """The importer's roots that have a module or package `first` (every candidate path starts
        there): the same for most folders of a tree, so a name asked from hundreds of folders has one
        answer."""
        roots = tuple(root for root in self._roots_of(folder) if _holds(root, first))
        if not roots:
            # a namespace package named by its folder (`texar/`, no `__init__.py`, holding `texar/torch/`
            # imported as `texar.torch`): its parent holds it
            name, parent = _namespace_of(folder)
            roots = (parent,) if name == first else ()
        if not roots:
            # a script run from a folder inside the package tree (`code/main.py`, `code/` holding an
            # `__init__.py` too) puts that folder first on the path, and the modules below it import
            # their siblings by their own names (`import_module("loss.adversarial")` in `code/loss/`):
            # the nearest folder between this one and the top that holds the name
            top = package_root(os.path.join(folder, "__init__.py"))[0]
            ancestor = folder
            while not roots and len(ancestor) > len(top) and ancestor.startswith(top):
                ancestor = os.path.dirname(ancestor)
                roots = (ancestor,) if _holds(ancestor, first) else ()
        return roots

    def _module_in(self, module: str, roots: Tuple[str, ...]) -> Optional[str]:
        key = (module, roots)
        if key not in self._files:
            self._files[key] = self._find_module(module, roots)
        return self._files[key]

    @staticmethod
    def _find_module(module: str, roots: Tuple[str, ...]) -> Optional[str]:
        if not module or not all(part.isidentifier() for part in module.split(".")):
            return None
        relative = module.replace(".", os.sep)
        for root in roots:
            for candidate in (os.path.join(root, relative + ".py"), os.path.join(root, relative, "__init__.py")):
                if _isfile(candidate):
                    return candidate
        return None

    def resolve(self, dotted: str, importer: str) -> Optional[Tuple[str, str]]:
        """The longest prefix of `dotted` that is a project module, and the rest (`Trainer.fit`)."""
        name = self.absolute(dotted, importer)
        importer = os.path.abspath(importer)
        roots = self._roots_holding(os.path.dirname(importer), name.split(".", 1)[0])
        key = (name, roots)
        if key not in self._first:
            self._first[key] = next(self._along(name, roots), None)
        found = self._first[key]
        if found is not None and found[0] == importer:  # both absolute (the roots are): the file itself
            found = next((hit for hit in self._along(name, roots) if hit[0] != importer), None)
        return found

    def _along(self, name: str, roots: Tuple[str, ...]) -> Iterator[Tuple[str, str]]:
        """Each prefix of `name` that is a module, longest first, with the rest of the name."""
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            path = self._module_in(".".join(parts[:cut]), roots)
            if path is not None:
                yield path, ".".join(parts[cut:])
