"""End-to-end fixtures: `fixtures/<CODE>/*.py` carry their expected findings as `# expect:` comments
(bugbear style); a `*.fixed.py` beside a case is the exact expected `--fix --unsafe-fixes` output;
`fixtures/refusals/*.py` name the refusal they expect in a `# refusal:` comment and must stay unchanged.

A case with an `# engine-v3: known miss` or `# engine-v3: known false report` line (`fixtures/model/`:
causes of misses and false reports that engine v3 must fix) states the CORRECT findings, which today's
engine does not give: it runs as a strict xfail, so it must fail today and turns into an error the day
the engine meets it (then delete the marker line).
"""
import re
from pathlib import Path
from typing import List, Tuple

import pytest

from ddp_lint.engine import lint_source
from ddp_lint.fixer.apply import fix_source, fixable
from ddp_lint.pipeline import check_text
from ddp_lint.prefilter import stage_decisions
from ddp_lint.settings import Selection, Settings

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
ALL = Settings(Selection(select=("ALL",)))
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")
KNOWN = re.compile(r"^#\s*engine-v3:\s*known (miss|false report)\b", re.MULTILINE)

CASES = sorted(p for p in ROOT.rglob("*.py") if not p.name.endswith(".fixed.py") and "projects" not in p.relative_to(ROOT).parts)
FIXED = sorted(p for p in CASES if p.with_name(p.stem + ".fixed.py").exists())
REFUSALS = sorted((ROOT / "refusals").glob("*.py"))


def expected(path: Path) -> List[Tuple[int, str]]:
    """The findings a case expects, sorted, as many times as its comments name them (`DDP101, DDP101`:
    two holders on one line); a second report of one holder is a finding too many."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            found.extend((number, code.strip()) for code in match.group(1).split(",") if code.strip())
    return sorted(found)


def case_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def known_v3_failure(source: str):
    """`known miss` / `known false report` when the file says today's engine does not meet its `# expect:`."""
    match = KNOWN.search(source)
    return match and f"engine-v3: known {match.group(1)}"


def with_v3_marks(paths):
    """Each path as a parameter; those marked `# engine-v3: known ...` as strict xfails: they must still
    run and fail today, and an unexpected pass is an error (remove the marker then)."""
    marked = []
    for path in paths:
        reason = known_v3_failure(path.read_text(encoding="utf-8"))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        marked.append(pytest.param(path, marks=marks, id=case_id(path)))
    return marked


@pytest.mark.parametrize("path", with_v3_marks(CASES))
def test_findings_match_expect_comments(path):
    source = path.read_text(encoding="utf-8")
    actual = sorted((f.line, f.code) for f in lint_source(source, str(path), ALL))
    assert actual == expected(path)


@pytest.mark.parametrize("path", CASES, ids=case_id)
def test_prefilter_never_rejects_a_file_with_findings(path):
    source = path.read_text(encoding="utf-8")
    for settings, with_wraps in ((ALL, True), (Settings(), False)):
        if lint_source(source, str(path), settings, prefilter=False):
            assert stage_decisions(source, with_wraps=with_wraps) == {"text": True, "code": True, "tree": True}


@pytest.mark.parametrize("path", FIXED, ids=case_id)
def test_fix_output_matches_fixed_file(path):
    result = fix_source(path.read_text(encoding="utf-8"), str(path), unsafe=True, settings=ALL)
    assert result.source == path.with_name(path.stem + ".fixed.py").read_text(encoding="utf-8")
    assert result.applied >= 1
    assert fixable(result.remaining, unsafe=True) == []


@pytest.mark.parametrize("path", REFUSALS, ids=case_id)
def test_refusal_reason_is_reported_and_file_left_alone(path):
    source = path.read_text(encoding="utf-8")
    reason = re.search(r"# refusal: (.+)", source).group(1).strip()
    findings = check_text(source, str(path), ALL)
    assert findings and all(f.fix is not None and f.fix.available is False for f in findings)
    assert any(reason in f.fix.reason and reason in f.message for f in findings)
    result = fix_source(source, str(path), unsafe=True, settings=ALL)
    assert result.source == source and result.applied == 0


def test_every_rule_has_a_fixture_folder():
    from ddp_lint.rules import RULES

    for code in RULES:
        assert any((ROOT / code).glob("*.py")), code


def test_realistic_corpus_is_large_and_has_hard_negatives():
    corpus = sorted((ROOT / "realistic").glob("*.py"))
    negatives = [p for p in corpus if not expected(p)]
    assert len(corpus) >= 60
    assert len(negatives) * 3 >= len(corpus)


EDITED = [p for p in CASES if "fixed" not in p.name]


@pytest.mark.parametrize("path", EDITED, ids=case_id)
def test_each_findings_edit_is_its_fix_alone(path):
    """The JSON/SARIF `fix.edit` (computed by a rebuild that descends only to the changed block),
    spliced into the source, gives what rebuilding the whole tree with that one fix gives."""
    from ddp_lint.documents.python import PythonDocument, decode
    from ddp_lint.engine import analyse_source
    from ddp_lint.fixer.apply import apply_plans
    from ddp_lint.pipeline import wire

    source = path.read_text(encoding="utf-8")
    parsed = analyse_source(source, str(path), ALL)
    document = PythonDocument(str(path), decode(source.encode("utf-8")))
    for finding in fixable(parsed.findings, unsafe=True):
        edit = wire(finding, document, parsed, edits=True).fix.edit
        lines = source.splitlines(keepends=True)
        spliced = lines[: edit.line - 1] + [edit.content] + lines[edit.end_line:]
        assert "".join(spliced) == apply_plans(parsed.module, [finding.plan]), finding.message
