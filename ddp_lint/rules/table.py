"""One table of every rule: its code, name, severity, the catalog kinds it reads and the rules that say
more about the same holder. Rules, the engine, the prefilter, the runtime, SARIF and the README's rule
table (checked by a test) all read it; it imports nothing heavy, so a run served from the cache or a
file the prefilter rejects never loads a rule module.

A rule's `reads` is the only list of the placements it fires on: `HolderRule.check` offers a rule only
the steps `reads_placement` lets through, so the kinds the prefilter and the engine skip by are the
kinds the rules fire on (tests/test_rule_table.py holds every rule's hits to its row).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Tuple

from .. import catalog as cat

ERROR, WARNING, INFO = "error", "warning", "info"

# Not a placement kind: a rule that reads DDP-like wrappers (they register gradient hooks) whatever
# their kind (defined in the catalog, which the fix planner reads too).
SYNC_WRAPPER = cat.SYNC_WRAPPER


@dataclass(frozen=True)
class RuleInfo:
    name: str
    severity: str
    reads: FrozenSet[str]  # placement kinds (and SYNC_WRAPPER) whose events can make it fire
    yields_to: Tuple[str, ...] = ()  # when one of these fires on the same holder, this one stays quiet


def _reads(*kinds: str) -> FrozenSet[str]:
    return frozenset(kinds)


RULE_TABLE: Dict[str, RuleInfo] = {
    "DDP001": RuleInfo("stale-optimizer-after-replace", ERROR, _reads(cat.REPLACE)),
    "DDP002": RuleInfo("stateful-optimizer-before-move", ERROR, _reads(cat.MOVE, cat.CAST, cat.FSDP_ORIG, cat.HOME),
                       yields_to=("DDP005",)),
    "DDP003": RuleInfo("convert-after-wrap", ERROR, _reads(SYNC_WRAPPER, cat.MOVE, cat.CAST)),
    "DDP004": RuleInfo("discarded-wrapper", ERROR, _reads(SYNC_WRAPPER)),
    "DDP005": RuleInfo("zero-bucket-view-before-move", ERROR, _reads(cat.MOVE, cat.CAST)),
    # A stateful optimizer's crash, ZeRO's bucket views and its frozen device each say more than "fragile".
    "DDP101": RuleInfo("optimizer-before-move", WARNING, _reads(cat.MOVE, cat.CAST),
                       yields_to=("DDP002", "DDP005", "DDP102")),
    "DDP102": RuleInfo("zero-before-move", WARNING, _reads(cat.MOVE), yields_to=("DDP002",)),
    "DDP103": RuleInfo("optimizer-before-fsdp-orig-params", WARNING, _reads(cat.FSDP_ORIG), yields_to=("DDP002",)),
    "DDP104": RuleInfo("stepped-before-ddp", WARNING, _reads(SYNC_WRAPPER)),
    "DDP201": RuleInfo("optimizer-before-wrap", INFO, _reads(cat.WRAP)),
    "DDP202": RuleInfo("optimizer-before-memory-format", INFO, _reads(cat.LAYOUT)),
}

# Info-level rules describe a preference, not a bug; they run only when selected.
DEFAULT_SELECT = ("DDP0", "DDP1")


# Whether a rule whose row reads these kinds reads a placement (the fix planner asks the same).
PlacementFacts = cat.PlacementFacts
reads_placement = cat.reads_placement


def kinds_read(codes) -> FrozenSet[str]:
    """What the rules with these codes read: the prefilter keeps a file only for those kinds."""
    return frozenset().union(*(RULE_TABLE[code].reads for code in codes if code in RULE_TABLE))
