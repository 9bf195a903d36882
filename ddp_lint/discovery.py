"""Which files a run checks: Python sources and notebooks under the given paths, minus excluded folders."""
from __future__ import annotations

import fnmatch
import os
from typing import Iterable, Iterator, List, Tuple

SUFFIXES = (".py", ".pyi", ".ipynb")
_SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", "node_modules", ".mypy_cache",
     ".ruff_cache", ".pytest_cache", ".ddp_lint_cache", ".eggs", "site-packages"}
)


def is_excluded(path: str, patterns: Iterable[str]) -> bool:
    normalized = path.replace(os.sep, "/")
    name = os.path.basename(normalized.rstrip("/"))
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(normalized, pattern) or fnmatch.fnmatch(normalized, f"*/{pattern}"):
            return True
    return False


def discover(paths: Iterable[str], exclude: Iterable[str] = ()) -> Tuple[List[str], List[Tuple[str, str]]]:
    """Files to check, sorted, and (path, reason) for arguments that cannot be read."""
    exclude = tuple(exclude)
    files: List[str] = []
    errors: List[Tuple[str, str]] = []
    for path in paths:
        if path == "-":
            files.append(path)
        elif os.path.isdir(path):
            files.extend(_walk(path, exclude))
        elif os.path.lexists(path):
            if os.path.islink(path) and not os.path.exists(path):
                errors.append((path, _broken_link_reason(path)))
            elif not is_excluded(path, exclude):
                files.append(path)
        else:
            errors.append((path, "no such file or directory"))
    return sorted(dict.fromkeys(files)), errors


def _walk(root: str, exclude: Tuple[str, ...]) -> Iterator[str]:
    # followlinks=False: a symlinked folder that points at its parent must not loop forever.
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(
            d for d in dirnames
            if d not in _SKIPPED_DIRS
            and not os.path.exists(os.path.join(directory, d, "pyvenv.cfg"))
            and not is_excluded(os.path.join(directory, d), exclude)
        )
        for name in sorted(filenames):
            if name.endswith(SUFFIXES):
                path = os.path.join(directory, name)
                if not is_excluded(path, exclude):
                    yield path


def _broken_link_reason(path: str) -> str:
    try:
        os.stat(path)
    except OSError as exc:
        return f"cannot follow symlink: {exc.strerror.lower() if exc.strerror else exc}"
    return "broken symlink"
