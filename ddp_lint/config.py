"""`[tool.ddp-lint]` in pyproject.toml: found by walking up from the checked paths, strictly validated."""
from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import Any, Dict, Iterable, Optional, Tuple

from .catalog import CAST, FSDP_ORIG, MOVE, REPLACE, WRAP
from .settings import Selection, Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib


class ConfigError(Exception):
    """Invalid configuration; the message is one line naming the file and the key."""


_LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "extra-optimizer-factories", "extra-wrappers", "extra-managed-calls",
              "src")
_KNOWN = set(_LIST_KEYS) | {"per-file-ignores", "extra-placements", "extra-base-methods", "project"}
_PLACEMENT_KINDS = {"move": MOVE, "cast": CAST, "replace": REPLACE, "wrap": WRAP, "fsdp-orig-params": FSDP_ORIG}


def find_config(paths: Iterable[str]) -> Optional[str]:
    """The nearest pyproject.toml with a [tool.ddp-lint] table above the first path (or the cwd)."""
    start = os.path.abspath(next(iter(paths), "."))
    directory = start if os.path.isdir(start) else os.path.dirname(start)
    while True:
        candidate = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(candidate) and _has_table(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _has_table(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return b"ddp-lint" in handle.read()
    except OSError:
        return False


def load_config(path: str, base: Optional[Settings] = None) -> Tuple[Settings, str]:
    """Settings from a pyproject.toml; returns them with the folder that per-file patterns are relative to."""
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    table = document.get("tool", {}).get("ddp-lint")
    if table is None:
        return base or Settings(), os.path.dirname(os.path.abspath(path))
    return settings_from_table(table, path, base), os.path.dirname(os.path.abspath(path))


def settings_from_table(table: Dict[str, Any], where: str, base: Optional[Settings] = None) -> Settings:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.ddp-lint] must be a table")
    unknown = sorted(set(table) - _KNOWN)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} in [tool.ddp-lint] (known: {', '.join(sorted(_KNOWN))})")
    for key in _LIST_KEYS:
        if key in table and not (isinstance(table[key], list) and all(isinstance(v, str) for v in table[key])):
            raise ConfigError(f"{where}: [tool.ddp-lint] {key} must be a list of strings")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict) or not all(
        isinstance(v, list) and all(isinstance(c, str) for c in v) for v in per_file.values()
    ):
        raise ConfigError(f"{where}: [tool.ddp-lint] per-file-ignores must map glob patterns to lists of codes")
    placements = table.get("extra-placements", {})
    if not isinstance(placements, dict) or any(v not in _PLACEMENT_KINDS for v in placements.values()):
        raise ConfigError(
            f"{where}: [tool.ddp-lint] extra-placements must map qualified names to one of {', '.join(sorted(_PLACEMENT_KINDS))}"
        )
    base_methods = table.get("extra-base-methods", {})
    base_kinds = {**_PLACEMENT_KINDS, "ddp": "ddp", "optimizer": "optimizer"}
    if not isinstance(base_methods, dict) or any(
            not isinstance(k, str) or k.count(".") < 1 or v not in base_kinds for k, v in base_methods.items()):
        raise ConfigError(
            f"{where}: [tool.ddp-lint] extra-base-methods must map `pkg.Class.method` to one of {', '.join(sorted(base_kinds))}"
        )
    if "project" in table and not isinstance(table["project"], bool):
        raise ConfigError(f"{where}: [tool.ddp-lint] project must be true or false")
    base = base or Settings()
    folder = os.path.dirname(os.path.abspath(where))
    selection = Selection(
        select=tuple(table.get("select", base.selection.select)),
        ignore=tuple(table.get("ignore", base.selection.ignore)),
        extend_select=tuple(table.get("extend-select", base.selection.extend_select)),
    )
    catalog = base.catalog.extended(
        factories=table.get("extra-optimizer-factories", ()),
        placements={name: _PLACEMENT_KINDS[kind] for name, kind in placements.items()},
        wrappers=table.get("extra-wrappers", ()),
        managed=table.get("extra-managed-calls", ()),
        base_methods={name: base_kinds[kind] for name, kind in base_methods.items()},
    )
    return replace(
        base,
        selection=selection,
        catalog=catalog,
        per_file_ignores={k: tuple(v) for k, v in per_file.items()},
        exclude=tuple(table.get("exclude", base.exclude)),
        src=tuple(os.path.join(folder, p) for p in table["src"]) if "src" in table else base.src,
        project=table.get("project", base.project),
    )
