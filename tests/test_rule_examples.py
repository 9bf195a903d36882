"""Each rule's VALID/INVALID examples, taken from the rule module itself, run as tests."""
import pytest

from ddp_lint.engine import lint_source
from ddp_lint.rules import RULES, all_rules, severity_of
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))

VALID = [(rule.code, i, code) for rule in all_rules() for i, code in enumerate(rule.VALID)]
# A draft rule (`python -m ddp_lint.dev new-rule`) does not fire yet: its INVALID examples must fail
# until it does, and then the strict xfail says to delete its `draft` line.
INVALID = [
    pytest.param(rule.code, i, code, id=f"{rule.code}-invalid-{i}",
                 marks=[pytest.mark.xfail(strict=True, reason=f"draft: {rule.draft}")] if rule.draft else [])
    for rule in all_rules() for i, code in enumerate(rule.INVALID)
]


@pytest.mark.parametrize("code,index,source", VALID, ids=[f"{c}-valid-{i}" for c, i, _ in VALID])
def test_valid_example_does_not_fire(code, index, source):
    assert [f.code for f in lint_source(source, settings=ALL) if f.code == code] == []


@pytest.mark.parametrize("code,index,source", INVALID)
def test_invalid_example_fires(code, index, source):
    assert code in [f.code for f in lint_source(source, settings=ALL)]


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_is_documented_with_every_section(rule):
    doc = rule.__doc__
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in doc, f"{rule.code} lacks {section}"
    assert doc.startswith(f"{rule.code} {rule.name} ({rule.severity}")
    assert rule.VALID and rule.INVALID


def test_codes_fall_in_their_severity_range():
    # the prefilter and the flake8 plugin read severity from the code, without loading the rules
    ranges = {"error": "DDP0", "warning": "DDP1", "info": "DDP2"}
    for code, rule in RULES.items():
        assert code.startswith(ranges[rule.severity]), code
        assert severity_of(code) == rule.severity, code


def test_readme_rule_table_is_the_rule_table():
    # README's table is written by hand; it must list every rule with the table's name and severity.
    import re
    from pathlib import Path

    from ddp_lint.rules.table import RULE_TABLE

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    rows = {m.group(1): (m.group(2), m.group(3)) for m in re.finditer(r"^\| (DDP\d{3}) \| ([\w-]+) \| (\w+)", readme, re.M)}
    assert rows == {code: (info.name, info.severity) for code, info in RULE_TABLE.items()}


def test_every_rule_in_the_table_has_a_module_and_back():
    from ddp_lint.rules import rule_codes
    from ddp_lint.rules.table import RULE_TABLE

    assert set(rule_codes()) == set(RULE_TABLE)
