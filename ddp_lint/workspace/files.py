"""The files a run checks: Python sources and notebooks under the given paths, as ruff chooses them.

A folder is walked minus what is excluded there: the governing configuration's `exclude` (ruff's
defaults: `build`, `dist`, `.venv`, `*.egg-info`, ...) and `extend-exclude`, the `.gitignore` files
of the repository (from its root down, `.git/info/exclude` too; `respect-gitignore = false` turns
them off), and any folder holding a virtual environment. A path named on the command line is
checked even when excluded, unless `force-exclude` is on (pre-commit names every staged file); a
folder named there is walked even when it is excluded or ignored itself (`ddp-lint build/`), the
exclusions then applying inside it as if it were the top.
A folder that cannot be read is an error of the run, never silently skipped.
"""
from __future__ import annotations

import os
from typing import Dict, Iterable, List, Optional, Tuple

from ..documents.python import not_regular
from .configs import Resolved, Resolver
from .globs import Globs

SUFFIXES = (".py", ".pyi", ".ipynb")
# Never checked, whatever the configuration says: version control and cache internals.
_ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn", "__pycache__", ".ddp_lint_cache"})

Errors = List[Tuple[str, str]]


class _GitIgnores:
    """The `.gitignore` patterns in force in a folder, outermost first (a deeper file overrides)."""

    def __init__(self) -> None:
        self._by_folder: Dict[str, Tuple[Globs, ...]] = {}

    def chain(self, folder: str) -> Tuple[Globs, ...]:
        folder = os.path.abspath(folder)
        found = self._by_folder.get(folder)
        if found is not None:
            return found
        parent = os.path.dirname(folder)
        if os.path.isdir(os.path.join(folder, ".git")) or parent == folder:
            outer: Tuple[Globs, ...] = _read(os.path.join(folder, ".git", "info", "exclude"), folder)
        else:
            outer = self.chain(parent)
        found = outer + _read(os.path.join(folder, ".gitignore"), folder)
        self._by_folder[folder] = found
        return found

    def stop_above(self, folder: str) -> None:
        """Outside a repository, the walk's own folder is the outermost whose .gitignore counts."""
        folder = os.path.abspath(folder)
        self._by_folder = {k: v for k, v in self._by_folder.items() if not (k == folder or k.startswith(folder + os.sep))}
        self._by_folder[os.path.dirname(folder)] = ()

    def ignored(self, path: str, is_dir: bool) -> bool:
        decision: Optional[bool] = None
        for globs in self.chain(os.path.dirname(path if os.path.isabs(path) else os.path.abspath(path))):
            verdict = globs.decision(path, is_dir)
            if verdict is not None:
                decision = verdict
        return bool(decision)


def _read(path: str, folder: str) -> Tuple[Globs, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return ()
    globs = Globs(lines, folder)
    return (globs,) if globs else ()


def _outside_repository(path: str) -> bool:
    """True when no folder above `path` is a git repository: then only `.gitignore` files at or
    below the checked folder count (a stray `/tmp/.gitignore` must not hide a project)."""
    folder = os.path.abspath(path)
    while True:
        if os.path.isdir(os.path.join(folder, ".git")):
            return False
        parent = os.path.dirname(folder)
        if parent == folder:
            return True
        folder = parent


class Discovery:
    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.gitignores = _GitIgnores()
        self._tops: Dict[tuple, Globs] = {}

    def excluded(self, path: str, is_dir: bool, resolved: Resolved, top: Optional[str] = None) -> bool:
        """`top`: a named folder that is itself excluded; patterns are then read relative to it, since
        a pattern that matches a folder matches everything inside it."""
        if os.path.basename(path) in _ALWAYS_SKIPPED and is_dir:
            return True
        globs = resolved.exclude if top is None else self._rebased(resolved, top)
        if globs.matches(path, is_dir):
            return True
        return resolved.settings.respect_gitignore and self.gitignores.ignored(path, is_dir)

    def _rebased(self, resolved: Resolved, top: str) -> Globs:
        key = (id(resolved), top)
        globs = self._tops.get(key)
        if globs is None:
            globs = self._tops[key] = Globs(resolved.exclude.patterns, top)
        return globs

    def files(self, paths: Iterable[str]) -> Tuple[List[str], Errors]:
        """Files to check, sorted, and (path, reason) for what cannot be read."""
        files: List[str] = []
        errors: Errors = []
        for path in paths:
            if path == "-":
                files.append(path)
            elif os.path.isdir(path):
                if _outside_repository(path):
                    self.gitignores.stop_above(path)
                files.extend(self._walk(path, errors))
            elif os.path.lexists(path):
                if os.path.islink(path) and not os.path.exists(path):
                    errors.append((path, _broken_link_reason(path)))
                    continue
                what = _special(path)
                if what is not None:
                    errors.append((path, f"not a regular file ({what}); ddp-lint reads only files"))
                    continue
                if not self.excluded_path(path):
                    files.append(path)
            else:
                errors.append((path, "no such file or directory"))
        return sorted(dict.fromkeys(files)), errors

    def excluded_path(self, path: str) -> bool:
        """Whether a path named on the command line (or stdin's name) is left out: only under
        `force-exclude`, and then as a walk would leave it out."""
        resolved = self.resolver.for_path(path)
        return resolved.settings.force_exclude and self._excluded_with_parents(path, resolved)

    def _excluded_with_parents(self, path: str, resolved: Resolved) -> bool:
        """A named file is excluded when it, or a folder between it and its configuration, is."""
        if self.excluded(path, False, resolved):
            return True
        folder = os.path.dirname(os.path.abspath(path))
        stop = os.path.abspath(resolved.root)
        while folder.startswith(stop + os.sep):
            if self.excluded(folder, True, self.resolver.for_directory(os.path.dirname(folder))):
                return True
            folder = os.path.dirname(folder)
        return False

    def _walk(self, root: str, errors: Errors) -> List[str]:
        found: List[str] = []

        def unreadable(error: OSError) -> None:
            where = error.filename or root
            errors.append((where, f"cannot read directory: {(error.strerror or str(error)).lower()}"))

        start = self.resolver.for_directory(root)
        top = None
        if start.excluded(root, True):
            top = os.path.abspath(root)  # named explicitly: walked, its inside judged from it
        if start.settings.respect_gitignore and self.gitignores.ignored(root, True):
            self.gitignores.stop_above(root)  # likewise: only the .gitignore files inside it count
        # followlinks=False: a symlinked folder that points at its parent must not loop forever.
        for directory, dirnames, filenames in os.walk(root, followlinks=False, onerror=unreadable):
            absolute = os.path.abspath(directory)  # once per folder: patterns match absolute paths
            resolved = self.resolver.for_directory(absolute)
            dirnames[:] = sorted(
                d for d in dirnames
                if not os.path.exists(os.path.join(absolute, d, "pyvenv.cfg"))
                and not self.excluded(os.path.join(absolute, d), True, resolved, top)
            )
            for name in sorted(filenames):
                if name.endswith(SUFFIXES) and not self.excluded(os.path.join(absolute, name), False, resolved, top):
                    if _special(os.path.join(absolute, name)) is None:  # a pipe or device would block the run
                        found.append(os.path.join(directory, name))
        return found


def _special(path: str) -> Optional[str]:
    """What a path is when it is a named pipe, socket or device (followed through symlinks); None for
    a regular file, and for one that cannot be examined (reading it reports why)."""
    try:
        return not_regular(os.stat(path).st_mode)
    except OSError:
        return None


def _broken_link_reason(path: str) -> str:
    try:
        os.stat(path)
    except OSError as exc:
        return f"cannot follow symlink: {exc.strerror.lower() if exc.strerror else exc}"
    return "broken symlink"
