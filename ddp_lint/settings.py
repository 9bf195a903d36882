"""Which rules run and what the catalog knows: the settings every front end builds and the engine reads."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, Optional, Tuple

from .catalog import DEFAULT_CATALOG, Catalog
from .rules import DEFAULT_SELECT, rule_codes


def _matches(code: str, prefixes: Iterable[str]) -> int:
    """Length of the longest prefix of `prefixes` that selects `code` (0: none). `ALL` is the shortest."""
    best = 0
    for prefix in prefixes:
        if prefix == "ALL":
            best = max(best, 1)
        elif code.startswith(prefix):
            best = max(best, len(prefix) + 1)
    return best


def selector_problem(selector: str) -> Optional[str]:
    """Why `selector` selects nothing (None when it names a rule or a prefix of one, or is `ALL`).

    A typo must not turn the linter off: `DDP9`, `DDP1011`, `ddp1` (codes are upper case, as
    documented) and `"DDP101 "` all select no rule and are refused by name."""
    if selector == "ALL" or any(code.startswith(selector) for code in rule_codes() if selector):
        return None
    if not selector.strip():
        return "an empty rule selector"
    hint = ""
    if selector != selector.strip():
        hint = " (remove the spaces)"
    elif selector.upper() != selector and selector_problem(selector.upper()) is None:
        hint = f" (codes are upper case: {selector.upper()!r})"
    return f"unknown rule selector {selector!r}{hint}: use a code like DDP101, a prefix like DDP1, or ALL"


@dataclass(frozen=True)
class Selection:
    """ruff's selection model: the most specific of select/ignore wins; extend-select adds."""

    select: Tuple[str, ...] = DEFAULT_SELECT
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    # per-file-ignores: applied after the selection, as ruff does, so a broad `DDP` there still
    # removes a rule that a more specific `select` turned on
    removed: Tuple[str, ...] = ()

    def enabled(self, code: str) -> bool:
        if _matches(code, self.removed):
            return False
        chosen = max(_matches(code, self.select), _matches(code, self.extend_select))
        return chosen > _matches(code, self.ignore)  # on a tie, ignore wins

    def codes(self) -> Tuple[str, ...]:
        return tuple(code for code in rule_codes() if self.enabled(code))

    def narrowed(self, ignore: Iterable[str]) -> "Selection":
        return Selection(self.select, self.ignore, self.extend_select, self.removed + tuple(ignore))


DEFAULT_EXCLUDE: Tuple[str, ...] = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox",
    ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode",
    "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
    "*.egg-info", ".ddp_lint_cache",
)


@dataclass(frozen=True)
class Settings:
    selection: Selection = field(default_factory=Selection)
    catalog: Catalog = DEFAULT_CATALOG
    per_file_ignores: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    # Folders and files never checked (ruff's defaults; `exclude` replaces them, `extend-exclude`
    # adds), also for paths named on the command line with `force_exclude` (pre-commit names them).
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: Tuple[str, ...] = ()
    force_exclude: bool = False
    respect_gitignore: bool = True
    # Folders imports are resolved from besides the file's own (ruff's `src`), and whether calls into
    # the project's other modules are followed at all.
    src: Tuple[str, ...] = ()
    project: bool = True
    # `--ignore-noqa`: report (and fix) findings that noqa comments silence
    ignore_noqa: bool = False
