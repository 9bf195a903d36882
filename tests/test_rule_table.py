"""A rule's table row (`RuleInfo.reads`) is the only list of the placements it fires on: the prefilter
and the engine skip files and fix targets by it, so a rule that fired on a kind its row lacks would
lose findings to them, and a kind no rule fires on keeps files for nothing. Every rule is run over
every fixture and every rule example, before the engine's yielding, and each hit is held to its row.
"""
from pathlib import Path
from typing import Dict, Iterator, Set, Tuple

import pytest

from ddp_lint import catalog as cat
from ddp_lint.analysis.module import analyze_module
from ddp_lint.analysis.positions import Positions
from ddp_lint.analysis.stories import holder_stories
from ddp_lint.documents.python import InputError
from ddp_lint.parsing import parse
from ddp_lint.rules import RULES, all_rules
from ddp_lint.rules.base import RuleHit
from ddp_lint.rules.table import RULE_TABLE, SYNC_WRAPPER, reads_placement

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
SOURCES = [p.read_text(encoding="utf-8") for p in sorted(ROOT.rglob("*.py")) if not p.name.endswith(".fixed.py")]
SOURCES += [source for rule in all_rules() for source in (*rule.VALID, *rule.INVALID)]

# A discarded wrapper is its own event (DiscardedWrapperEvent), not a placement: the analysis emits it
# only for catalog placements marked sync_wrapper, so the rule's hits name no placement.
WITHOUT_PLACEMENTS = {"DDP004": frozenset({SYNC_WRAPPER})}


def raw_hits(source: str) -> Iterator[RuleHit]:
    """Every rule's hits in one file, as the engine gets them before one rule yields to another."""
    try:
        module = parse(source)
    except InputError:  # the syntax-error fixtures
        return
    overwrite = cat.OVERWRITE_FLAG in source and "True" in source
    analysis = analyze_module(module, cat.DEFAULT_CATALOG, overwrite, source=source)
    positions = []

    def line_of(node) -> int:
        if not positions:
            positions.append(Positions(module))
        return positions[0][node].start.line

    for scope in analysis.scopes:
        stories = list(holder_stories(scope))
        for rule in all_rules():
            yield from rule.check(scope, stories, line_of)


@pytest.fixture(scope="module")
def hits_by_code() -> Dict[str, list]:
    found: Dict[str, list] = {code: [] for code in RULE_TABLE}
    for source in SOURCES:
        for hit in raw_hits(source):
            found[hit.code].append(hit)
    return found


def _kinds_of(hit: RuleHit) -> Set[str]:
    """The row's kinds its placements were read as: a DDP-like wrapper whose own kind the row lacks, as SYNC_WRAPPER."""
    return {SYNC_WRAPPER if p.sync_wrapper and p.kind not in RULE_TABLE[hit.code].reads else p.kind for p in hit.placements}


def test_every_hit_fires_only_on_placements_its_table_row_reads(hits_by_code):
    outside: Set[Tuple[str, str, str]] = set()
    for code, hits in hits_by_code.items():
        for hit in hits:
            assert hit.placements or code in WITHOUT_PLACEMENTS, f"{code} fired without naming its placements"
            outside.update((code, p.kind, p.label) for p in hit.placements if not reads_placement(RULE_TABLE[code].reads, p))
    assert not outside, f"rules fired on kinds their rows in rules/table.py do not read: {sorted(outside)}"


def test_rules_whose_hits_name_no_placement_read_only_sync_wrappers():
    for code, reads in WITHOUT_PLACEMENTS.items():
        assert RULE_TABLE[code].reads == reads


def test_every_kind_in_a_table_row_makes_its_rule_fire_somewhere(hits_by_code):
    # a kind no fixture or example fires on is dead (the prefilter keeps files for it) or untested
    unused = []
    for code, info in RULE_TABLE.items():
        if RULES[code].draft:
            continue  # its accepts() is not written yet
        fired = set().union(*(_kinds_of(hit) for hit in hits_by_code[code])) if code not in WITHOUT_PLACEMENTS else info.reads
        unused += [(code, kind) for kind in sorted(info.reads - fired)]
    assert not unused, f"table kinds no fixture or rule example fires on: {unused}"
