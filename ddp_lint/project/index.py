"""The checked project as one program: summaries of its modules' functions and classes, on demand.

A file is still analysed on its own; a call of a function or class that an import brings in from
another module of the project (`from .utils import smart_ddp`, `from trainer import Trainer`) asks
this index, which parses that module once per process and summarises the one function or class
asked for, the way same-file helpers are summarised (what it does to its arguments: moves, casts,
wraps, replaces; which holders it builds on them). Those modules are recorded with the hash of
their bytes, so that the results cache knows a finding in `train.py` depends on `trainer.py`.

What is not followed: a name that leads outside the project (the catalog speaks for torch and the
libraries), a module that does not parse, and a cycle of calls (the inner call then has no summary,
as a recursive same-file helper has none).
"""
from __future__ import annotations

import hashlib
import os
import re
from typing import Dict, Iterable, Optional, Set, Tuple

from .. import catalog as cat
from .modules import Resolver

# `from x import a, b` / `from . import c` / `import x.y as z`, enough to see which project modules a
# file could reach without parsing it (the prefilter's question).
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?([\w, \t\n\\]+)|import[ \t]+([\w., \t]+))",
                     re.MULTILINE)


class ProjectIndex:
    def __init__(self, roots: Iterable[str] = (), catalog: cat.Catalog = cat.DEFAULT_CATALOG) -> None:
        self.resolver = Resolver(roots)
        self.catalog = catalog
        self._modules: Dict[str, object] = {}  # path -> ModuleSummaries, or None when it cannot be read
        self._texts: Dict[str, Optional[str]] = {}
        self._hashes: Dict[str, str] = {}
        self._reach: Dict[str, Tuple[bool, bool]] = {}
        self.consulted: Set[str] = set()  # paths whose content the current file's result depends on

    # ----- for the cache ---------------------------------------------------------------------------
    def begin(self) -> None:
        """A new file is about to be analysed: start recording what it depends on."""
        self.consulted = set()

    def dependencies(self) -> Dict[str, str]:
        return {path: self._hashes[path] for path in sorted(self.consulted) if path in self._hashes}

    # ----- reading ---------------------------------------------------------------------------------
    def _text(self, path: str) -> Optional[str]:
        if path not in self._texts:
            from ..source import InputError, read_source

            try:
                source = read_source(path)
                self._texts[path] = source.text
                self._hashes[path] = hashlib.sha256(source.raw).hexdigest()
            except InputError:
                self._texts[path] = None
        self.consulted.add(path)
        return self._texts[path]

    def _summaries(self, path: str):
        if path not in self._modules:
            self._modules[path] = None  # a cycle of modules asking each other sees nothing
            text = self._text(path)
            if text is None:
                return None
            import libcst as cst  # only here: a flake8 worker that never follows a call never loads it

            try:
                module = cst.parse_module(text)
            except (cst.ParserSyntaxError, RecursionError, MemoryError):
                return None
            from ..analysis.module import ModuleSummaries

            self._modules[path] = (ModuleSummaries(module, self.catalog, self, path), module)
        else:
            self.consulted.add(path)
        return self._modules[path]

    # ----- for the walker ----------------------------------------------------------------------------
    def lookup(self, dotted: str, importer: str):
        """The summary of the function or class that `dotted` (as imported in `importer`) names."""
        if dotted.split(".")[0] in _OUTSIDE:
            return None
        found = self.resolver.resolve(dotted, importer)
        if found is None:
            return None
        path, inner = found
        entry = self._summaries(path)
        if entry is None:
            return None
        summaries, module = entry
        summary = summaries.get(inner)
        if summary is not None and summary.locate is None:
            summary.locate = _locator(path, module)
        return summary

    # ----- for the prefilter -------------------------------------------------------------------------
    def reaches(self, text: str, importer: str, with_wraps: bool) -> Tuple[bool, bool]:
        """Whether the project modules this text imports (and theirs, transitively) could hold a
        holder or a placement: a file whose own text has only one half may get the other from them."""
        holder = placement = False
        for path in self._imported_paths(text, importer):
            h, p = self._reach_of(path, with_wraps, set())
            holder, placement = holder or h, placement or p
            if holder and placement:
                break
        return holder, placement

    def _reach_of(self, path: str, with_wraps: bool, visiting: Set[str]) -> Tuple[bool, bool]:
        if path in self._reach:
            self.consulted.add(path)
            return self._reach[path]
        if path in visiting:
            return False, False
        visiting.add(path)
        text = self._text(path)
        if text is None:
            return False, False
        from ..prefilter import token_halves

        holder, placement = token_halves(text, self.catalog, with_wraps)
        for inner in self._imported_paths(text, path):
            if holder and placement:
                break
            h, p = self._reach_of(inner, with_wraps, visiting)
            holder, placement = holder or h, placement or p
        self._reach[path] = (holder, placement)
        return holder, placement

    def _imported_paths(self, text: str, importer: str) -> Set[str]:
        paths = set()
        for match in _IMPORT.finditer(text):
            module, names, plain = match.groups()
            candidates = []
            if plain is not None:
                candidates = [part.split(" as ")[0].strip() for part in plain.split(",")]
            elif module is not None:
                for name in re.split(r"[,\s\\()]+", names or ""):
                    if name and name != "as" and name.isidentifier():
                        candidates.append(f"{module}.{name}" if module and not module.endswith(".") else module + name)
            for candidate in candidates:
                if not candidate or candidate.split(".")[0] in _OUTSIDE:
                    continue
                found = self.resolver.resolve(candidate, importer)
                if found is not None:
                    paths.add(found[0])
        return paths


# Packages the catalog describes: their names are never looked up as project code, even when the
# checked tree is that package's own source.
_OUTSIDE = frozenset({"torch", "typing", "os", "sys", "re", "math", "collections", "functools", "itertools"})


def _locator(path: str, module):
    positions = []

    def locate(node) -> Tuple[str, int, int]:
        if not positions:
            from ..analysis.positions import Positions

            positions.append(Positions(module))
        try:
            where = positions[0][node]
        except KeyError:
            return path, 1, 0
        return path, where.start.line, where.start.column

    return locate


_INDEXES: Dict[Tuple[Tuple[str, ...], int], ProjectIndex] = {}


def forget() -> None:
    """Drop this process's indexes: a new run reads the files as they are now (worker processes of a
    run start empty; this is for a run made inside a process that made one before)."""
    _INDEXES.clear()


def index_for(roots: Tuple[str, ...], catalog: cat.Catalog) -> ProjectIndex:
    """One index per process and project: a pool worker reuses the modules it already summarised."""
    key = (tuple(os.path.abspath(r) for r in roots), id(catalog))
    if key not in _INDEXES:
        _INDEXES.clear()
        _INDEXES[key] = ProjectIndex(roots, catalog)
    return _INDEXES[key]
