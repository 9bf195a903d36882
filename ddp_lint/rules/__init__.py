"""The rule set: every module `ddpNNN_<name>.py` in this package holds one rule, found by its file name.

Rule modules are imported on first use: a run served from the cache never loads the parser.
"""
from __future__ import annotations

import importlib
import os
import re
from functools import lru_cache
from typing import Dict, List, Tuple

_RULE_MODULE = re.compile(r"^(ddp\d{3})_\w+\.py$")

from .table import DEFAULT_SELECT, ERROR, INFO, RULE_TABLE, WARNING  # noqa: F401 (read from here)

# A rule's hundreds digit is its severity (the rule tests hold the table to it), so that a code the
# table does not know (the runtime's DDP000) still has one.
_SEVERITY_OF_FAMILY = {"0": ERROR, "1": WARNING, "2": INFO}


def severity_of(code: str) -> str:
    info = RULE_TABLE.get(code)
    return info.severity if info is not None else _SEVERITY_OF_FAMILY[code[3]]


@lru_cache(maxsize=1)
def _modules() -> Dict[str, str]:
    folder = os.path.dirname(__file__)
    found = {}
    for name in sorted(os.listdir(folder)):
        match = _RULE_MODULE.match(name)
        if match:
            found[match.group(1).upper()] = name[:-3]
    return found


def rule_codes() -> Tuple[str, ...]:
    """Every rule code, known from the module names alone."""
    return tuple(sorted(_modules()))


@lru_cache(maxsize=1)
def _load() -> Dict[str, object]:
    from .base import Rule

    found = {}
    for code, module_name in _modules().items():
        module = importlib.import_module(f"{__name__}.{module_name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__ and getattr(value, "code", None):
                rule = value()
                rule.__doc__ = module.__doc__
                if rule.code != code:
                    raise ImportError(f"{module_name} holds rule {rule.code}, but its file name says {code}")
                if code not in RULE_TABLE:
                    raise ImportError(f"{module_name} holds rule {code}, which rules/table.py does not list")
                info = RULE_TABLE[code]
                rule.name, rule.severity, rule.superseded_by = info.name, info.severity, info.yields_to
                found[code] = rule
    return found


class _Rules(dict):
    """`RULES[code]`: loads every rule module the first time it is read."""

    def _fill(self) -> None:
        if not dict.__len__(self):
            dict.update(self, _load())

    def __getitem__(self, key):
        self._fill()
        return dict.__getitem__(self, key)

    def __contains__(self, key) -> bool:
        self._fill()
        return dict.__contains__(self, key)

    def __iter__(self):
        self._fill()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._fill()
        return dict.__len__(self)

    def items(self):
        self._fill()
        return dict.items(self)

    def values(self):
        self._fill()
        return dict.values(self)

    def keys(self):
        self._fill()
        return dict.keys(self)


RULES = _Rules()


def all_rules() -> List[object]:
    return [RULES[code] for code in rule_codes()]


def documentation(code: str) -> str:
    return RULES[code].__doc__ or ""
