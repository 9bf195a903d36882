"""The `[tool.ddp-lint]` table (or a `ddp-lint.toml`) read into Settings, strictly validated.

Which file governs which folder is `workspace.configs`; this module only reads one table.
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Dict, Optional

from .catalog import CAST, FSDP_ORIG, MOVE, REPLACE, WRAP
from .settings import Selection, Settings, selector_problem


class ConfigError(Exception):
    """Invalid configuration; the message is one line naming the file and the key."""


_SELECTOR_KEYS = ("select", "ignore", "extend-select", "extend-ignore")
_LIST_KEYS = _SELECTOR_KEYS + ("exclude", "extend-exclude", "extra-optimizer-factories", "extra-wrappers",
                               "extra-managed-calls", "src")
_BOOL_KEYS = ("project", "force-exclude", "respect-gitignore")
_KNOWN = set(_LIST_KEYS) | set(_BOOL_KEYS) | {"per-file-ignores", "extra-placements", "extra-base-methods"}
_PLACEMENT_KINDS = {"move": MOVE, "cast": CAST, "replace": REPLACE, "wrap": WRAP, "fsdp-orig-params": FSDP_ORIG}


def settings_from_table(table: Dict[str, Any], where: str, base: Optional[Settings] = None,
                        folder: Optional[str] = None) -> Settings:
    """`table` laid over `base` (the defaults): a key it sets replaces the base's value (`extend-*`
    keys add to it). `folder`: where `src` is relative to (default: the folder of the file `where`)."""
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
    for key in _BOOL_KEYS:
        if key in table and not isinstance(table[key], bool):
            raise ConfigError(f"{where}: [tool.ddp-lint] {key} must be true or false")
    for key in _SELECTOR_KEYS:
        for selector in table.get(key, ()):
            _check_selector(selector, where, key)
    for pattern, codes in per_file.items():
        for selector in codes:
            _check_selector(selector, where, f"per-file-ignores {pattern!r}")
    base = base or Settings()
    folder = folder or os.path.dirname(os.path.abspath(where))
    selection = Selection(
        select=tuple(table.get("select", base.selection.select)),
        # ruff's extend-ignore: ignore more (ignore itself, given here, replaces what the base ignores)
        ignore=tuple(table.get("ignore", base.selection.ignore)) + tuple(table.get("extend-ignore", ())),
        extend_select=base.selection.extend_select + tuple(table.get("extend-select", ())),
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
        per_file_ignores=(
            {k: tuple(v) for k, v in per_file.items()} if "per-file-ignores" in table else base.per_file_ignores
        ),
        exclude=tuple(table.get("exclude", base.exclude)),
        extend_exclude=base.extend_exclude + tuple(table.get("extend-exclude", ())),
        force_exclude=table.get("force-exclude", base.force_exclude),
        respect_gitignore=table.get("respect-gitignore", base.respect_gitignore),
        src=tuple(os.path.join(folder, p) for p in table["src"]) if "src" in table else base.src,
        project=table.get("project", base.project),
    )


def _check_selector(selector: str, where: str, key: str) -> None:
    problem = selector_problem(selector)
    if problem is not None:
        raise ConfigError(f"{where}: [tool.ddp-lint] {key}: {problem}")
