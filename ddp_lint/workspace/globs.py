"""Glob patterns with `.gitignore` semantics (pathspec), relative to the folder that declared them.

One engine for `exclude`, `extend-exclude`, `.gitignore` files and `per-file-ignores`, so a pattern
means the same thing wherever it is written: `build` or `test_*.py` (no slash) match a name at any
depth, `/build` or `src/gen/*.py` are anchored at the declaring folder, `*` stops at `/`, `**`
crosses folders, a trailing `/` matches folders only, and `!pattern` re-includes.
"""
from __future__ import annotations

import os
import re
from typing import Iterable, Optional, Tuple

import pathspec


class Globs:
    def __init__(self, patterns: Iterable[str], root: str) -> None:
        self.patterns: Tuple[str, ...] = tuple(patterns)
        self.root = os.path.abspath(root)
        self._spec = pathspec.GitIgnoreSpec.from_lines(self.patterns) if self.patterns else None
        self._prefix = self.root.rstrip(os.sep) + os.sep
        self._any = _any_of(self._spec) if self._spec is not None else None

    def __bool__(self) -> bool:
        return self._spec is not None

    def _relative(self, path: str, is_dir: bool) -> str:
        absolute = path if os.path.isabs(path) and "/." not in path and "//" not in path else os.path.abspath(path)
        if absolute.startswith(self._prefix):  # the walk's case: no normalization needed
            relative = absolute[len(self._prefix):]
        else:
            relative = os.path.relpath(absolute, self.root) if absolute != self.root else "."
        if relative == ".." or relative.startswith(".." + os.sep) or os.path.isabs(relative):
            # outside the declaring folder (another drive, or above it): only the name can match
            relative = os.path.basename(absolute)
        relative = relative.replace(os.sep, "/")
        return relative + "/" if is_dir else relative

    def decision(self, path: str, is_dir: bool = False) -> Optional[bool]:
        """True: matched (excluded), False: re-included by a `!` pattern, None: no pattern speaks."""
        if self._spec is None:
            return None
        relative = self._relative(path, is_dir)
        if relative in (".", "./"):
            return None
        if self._any is not None and self._any.search(relative) is None:
            return None  # most paths match no pattern: one search instead of one per pattern
        return self._spec.check_file(relative).include

    def matches(self, path: str, is_dir: bool = False) -> bool:
        return bool(self.decision(path, is_dir))


def _any_of(spec) -> Optional["re.Pattern[str]"]:
    """One regular expression that matches where any of the spec's patterns does (None when the
    patterns do not expose plain regular expressions, as another pathspec backend might not)."""
    parts = []
    for pattern in spec.patterns:
        regex = getattr(pattern, "regex", None)
        if pattern.include is None:
            continue  # a comment or blank line
        if regex is None or not hasattr(regex, "pattern"):
            return None
        parts.append(re.sub(r"\(\?P<\w+>", "(?:", regex.pattern))
    try:
        return re.compile("|".join(f"(?:{part})" for part in parts)) if parts else None
    except re.error:
        return None
