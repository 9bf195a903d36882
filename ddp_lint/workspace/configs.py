"""Which configuration governs a file: the nearest one above it that really configures ddp-lint.

Searched per folder, upwards, as ruff does: `ddp-lint.toml` or `.ddp-lint.toml` (the keys at the top
level), then `pyproject.toml` only when its TOML has a `[tool.ddp-lint]` table (a `pyproject.toml`
that merely mentions ddp-lint, say in its dependencies, is not a configuration and does not hide
the one above it). `--config FILE` governs every file; `--isolated` reads none. `--config "KEY =
VALUE"` settings (ruff's inline overrides) are laid over whichever file governs, validated as a
file's keys are, and the command line's own options over those. One resolver serves the CLI, the flake8 plugin and
`verify`, and caches by folder, so a tree of ten thousand files reads each configuration once.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Optional, Sequence, Tuple

from ..config import ConfigError, settings_from_table
from ..settings import Settings
from .globs import Globs

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

CONFIG_NAMES = ("ddp-lint.toml", ".ddp-lint.toml", "pyproject.toml")
INLINE = "--config"  # what a configuration error names for a `--config "KEY = VALUE"` setting


def config_arguments(values: Sequence[str]) -> Tuple[Optional[str], Optional[Dict[str, Any]]]:
    """`--config` values, as ruff reads them: (the configuration file, the `KEY = VALUE` settings).

    A value naming a file is the file (one at most); any other value is a TOML fragment of a
    configuration file's keys (`extend-select = ["DDP201"]`, `per-file-ignores."a.py" = ["DDP1"]`),
    later ones winning per key. The settings are validated here, before any file is read, with the
    configuration file's one-line errors."""
    path: Optional[str] = None
    table: Dict[str, Any] = {}
    for value in values:
        if os.path.isfile(value):
            if path is not None:
                raise ConfigError(f"{INLINE}: more than one configuration file ({path}, {value})")
            path = value
            continue
        if "=" not in value:
            raise ConfigError(f"{value}: no such file (and not a `KEY = VALUE` setting)")
        try:
            fragment = tomllib.loads(value)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{INLINE} {value!r}: invalid TOML: {exc}") from None
        for key, setting in fragment.items():
            if isinstance(setting, dict) and isinstance(table.get(key), dict):
                table[key] = {**table[key], **setting}
            else:
                table[key] = setting
    if table:
        settings_from_table(table, INLINE, folder=os.getcwd())  # raises the file's one-line errors
    return path, table or None


@dataclass(frozen=True)
class Overrides:
    """What the command line says about settings; None leaves the configuration's value."""

    select: Optional[Tuple[str, ...]] = None
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    exclude: Optional[Tuple[str, ...]] = None
    extend_exclude: Tuple[str, ...] = ()
    force_exclude: Optional[bool] = None
    respect_gitignore: Optional[bool] = None
    project: Optional[bool] = None
    ignore_noqa: Optional[bool] = None
    # `--config "KEY = VALUE"`: keys of a configuration file, read before the options above
    table: Optional[Dict[str, Any]] = field(default=None, hash=False)

    def apply(self, settings: Settings) -> Settings:
        if self.table:
            settings = settings_from_table(self.table, INLINE, base=settings, folder=os.getcwd())
        selection = settings.selection
        selection = replace(
            selection,
            select=self.select if self.select is not None else selection.select,
            ignore=selection.ignore + self.ignore,
            extend_select=selection.extend_select + self.extend_select,
        )
        return replace(
            settings,
            selection=selection,
            exclude=self.exclude if self.exclude is not None else settings.exclude,
            extend_exclude=settings.extend_exclude + self.extend_exclude,
            force_exclude=self.force_exclude if self.force_exclude is not None else settings.force_exclude,
            respect_gitignore=(
                self.respect_gitignore if self.respect_gitignore is not None else settings.respect_gitignore
            ),
            project=self.project if self.project is not None else settings.project,
            ignore_noqa=self.ignore_noqa if self.ignore_noqa is not None else settings.ignore_noqa,
        )


@dataclass(frozen=True)
class Resolved:
    """The settings that govern a folder, with the folder their relative patterns start from."""

    settings: Settings
    root: str  # the configuration's folder; the working folder when no configuration governs
    source: Optional[str] = None  # the configuration file, None for the defaults
    exclude: Globs = field(default=None, compare=False)  # type: ignore[assignment]

    def excluded(self, path: str, is_dir: bool) -> bool:
        return self.exclude.matches(path, is_dir)


def read_table(path: str) -> Optional[dict]:
    """The ddp-lint table a file holds, or None when it holds none (a plain pyproject.toml)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    standalone = os.path.basename(path) != "pyproject.toml"
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        if standalone or b"tool.ddp-lint" in raw:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from None
        return None  # someone else's broken pyproject.toml: not ours to judge
    if standalone:
        return document
    table = document.get("tool", {}).get("ddp-lint") if isinstance(document.get("tool"), dict) else None
    return table


class Resolver:
    def __init__(self, config: Optional[str] = None, isolated: bool = False, overrides: Overrides = Overrides(),
                 cwd: Optional[str] = None) -> None:
        self.config = os.path.abspath(config) if config else None
        self.isolated = isolated
        self.overrides = overrides
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self._folders: Dict[str, Resolved] = {}
        self._files: Dict[Optional[str], Resolved] = {}
        self._narrowed: Dict[tuple, Resolved] = {}
        if self.config is not None and not os.path.isfile(self.config):
            raise ConfigError(f"{config}: no such file")

    def for_path(self, path: str) -> Resolved:
        """The settings for one file, its per-file ignores applied."""
        absolute = os.path.abspath(path if path not in ("-", "") else os.path.join(self.cwd, "stdin.py"))
        resolved = self.for_directory(os.path.dirname(absolute))
        settings = resolved.settings
        if not settings.per_file_ignores:
            return resolved
        ignored = [
            code
            for pattern, codes in settings.per_file_ignores.items()
            if Globs((pattern,), resolved.root).matches(absolute)
            for code in codes
        ]
        if not ignored:
            return resolved
        key = (resolved.source, tuple(ignored))
        narrowed = self._narrowed.get(key)
        if narrowed is None:  # one object per distinct narrowing: callers memoize on it
            narrowed = replace(resolved, settings=replace(settings, selection=settings.selection.narrowed(ignored)))
            self._narrowed[key] = narrowed
        return narrowed

    def for_directory(self, directory: str) -> Resolved:
        directory = os.path.abspath(directory)
        found = self._folders.get(directory)
        if found is not None:
            return found
        if self.isolated or self.config is not None:
            found = self._load(self.config if not self.isolated else None)
            self._folders[directory] = found
            return found
        visited = []
        current = directory
        while True:
            found = self._folders.get(current)
            if found is not None:
                break
            visited.append(current)
            here = self._here(current)
            if here is not None:
                found = self._load(*here)
                break
            parent = os.path.dirname(current)
            if parent == current:
                found = self._load(None)
                break
            current = parent
        for folder in visited:  # every folder on the way shares the answer
            self._folders[folder] = found
        return found

    @staticmethod
    def _here(directory: str) -> Optional[Tuple[str, dict]]:
        for name in CONFIG_NAMES:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                table = read_table(candidate)
                if table is not None:
                    return candidate, table
        return None

    def _load(self, source: Optional[str], table: Optional[dict] = None) -> Resolved:
        cached = self._files.get(source)
        if cached is not None:
            return cached
        if source is None:
            settings, root = Settings(), self.cwd
        else:
            table = table if table is not None else (read_table(source) or {})
            settings, root = settings_from_table(table, source), os.path.dirname(source)
        settings = self.overrides.apply(settings)
        resolved = Resolved(settings, root, source, Globs(settings.exclude + settings.extend_exclude, root))
        self._files[source] = resolved
        return resolved
