"""The rule set: every module `ddpNNN_<name>.py` in this package holds one rule, found by its file name."""
from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Dict, List

from .base import Rule

_RULE_MODULE = re.compile(r"^ddp\d{3}_\w+$")


def _discover() -> Dict[str, Rule]:
    found: Dict[str, Rule] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not _RULE_MODULE.match(info.name):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and getattr(value, "code", None) and value.__module__ == module.__name__:
                rule = value()
                rule.__doc__ = module.__doc__
                found[rule.code] = rule
    return found


RULES: Dict[str, Rule] = _discover()

# Info-level rules describe a preference, not a bug; they run only when selected.
DEFAULT_SELECT = ("DDP0", "DDP1")


def all_rules() -> List[Rule]:
    return [RULES[code] for code in sorted(RULES)]


def documentation(code: str) -> str:
    return RULES[code].__doc__ or ""
