"""Which rules run and what the catalog knows: the settings every front end builds and the engine reads."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, Tuple

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


@dataclass(frozen=True)
class Selection:
    """ruff's selection model: the most specific of select/ignore wins; extend-select adds."""

    select: Tuple[str, ...] = DEFAULT_SELECT
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()

    def enabled(self, code: str) -> bool:
        chosen = max(_matches(code, self.select), _matches(code, self.extend_select))
        return chosen > _matches(code, self.ignore)  # on a tie, ignore wins

    def codes(self) -> Tuple[str, ...]:
        return tuple(code for code in rule_codes() if self.enabled(code))

    def narrowed(self, ignore: Iterable[str]) -> "Selection":
        return Selection(self.select, self.ignore + tuple(ignore), self.extend_select)


@dataclass(frozen=True)
class Settings:
    selection: Selection = field(default_factory=Selection)
    catalog: Catalog = DEFAULT_CATALOG
    per_file_ignores: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    exclude: Tuple[str, ...] = ()
    # Folders imports are resolved from besides the file's own (ruff's `src`), and whether calls into
    # the project's other modules are followed at all.
    src: Tuple[str, ...] = ()
    project: bool = True
