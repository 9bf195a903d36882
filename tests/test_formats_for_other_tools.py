"""The output formats ruff users reach for, pinned in full over every fixture folder and read back by
what consumes them: `grouped` and `pylint` (line shapes), `junit` (junitparser, a JUnit XML reader as
CI systems use), `gitlab` (the Code Quality report's required fields, fingerprints stable across runs
and line moves, distinct per finding); and `--show-fixes` in each mode.

After an intended change, rewrite the snapshots and review the diff like code:

    DDP_LINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_formats_for_other_tools.py
"""
import json
import re
from pathlib import Path

import pytest

from cli_run import matches_snapshot, repo_output, run

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots" / "formats"
PINNED = ("grouped", "pylint", "junit", "gitlab")
SEED = "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.cuda()\n"
# two findings with a fix each (DDP101 safe), and one without (DDP201 is reported only)
TWO = SEED + "opt2 = torch.optim.Adagrad(model.parameters())\nmodel.half()\n"


@pytest.fixture(scope="module")
def outputs():
    """Each pinned format's output for the whole `fixtures` tree, and the JSON of the same run."""
    rendered = {fmt: repo_output("--output-format", fmt, "fixtures") for fmt in PINNED}
    rendered["json"] = repo_output("--output-format", "json", "fixtures")
    return rendered


def _compare(name: str, actual: str) -> None:
    matches_snapshot(SNAPSHOTS / f"{name}.snap", actual, f"{name} output")


@pytest.mark.parametrize("fmt", PINNED)
def test_each_format_matches_its_snapshot_over_the_fixtures(outputs, fmt):
    _compare(fmt, outputs[fmt])


def test_grouped_names_each_file_once_with_its_findings_below(outputs):
    data = json.loads(outputs["json"])
    lines = outputs["grouped"].splitlines()
    headers = [line[:-1] for line in lines if line.endswith(":") and not line.startswith(" ")]
    assert headers == list(dict.fromkeys(f["path"] for f in data["findings"]))
    rows = [line for line in lines if re.match(r"^  +(cell \d+:)?\d+:\d+ +DDP\d{3} ", line)]
    assert len(rows) == len(data["findings"])
    assert "  cell 3:3:1 DDP101 [*] optimizer `optimizer` built before `model.cuda()` (line 1 of cell 5)" in lines


def test_pylint_lines_have_the_shape_parsers_read(outputs):
    data = json.loads(outputs["json"])
    shape = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): \[(?P<code>DDP\d{3}|error)\] (?P<text>.+)$")
    parsed = [shape.match(line) for line in outputs["pylint"].splitlines()]
    assert all(parsed), [line for line, m in zip(outputs["pylint"].splitlines(), parsed) if not m][:3]
    findings = [(m["path"], int(m["line"]), m["code"]) for m in parsed if m["code"] != "error"]
    assert findings == [(f["path"], 1 if "cell" in f else f["line"], f["code"]) for f in data["findings"]]
    assert sum(m["code"] == "error" for m in parsed) == len(data["errors"])


def test_junit_is_read_by_a_junit_parser_one_case_per_file_one_failure_per_finding(outputs, tmp_path):
    junitparser = pytest.importorskip("junitparser")
    data = json.loads(outputs["json"])
    report = tmp_path / "report.xml"
    report.write_text(outputs["junit"], encoding="utf-8")
    xml = junitparser.JUnitXml.fromfile(str(report))
    (suite,) = list(xml)
    cases = list(suite)
    assert len(cases) == data["summary"]["files"]
    assert len({case.name for case in cases}) == len(cases)
    failures = {case.name: [r for r in case.result if isinstance(r, junitparser.Failure)] for case in cases}
    errors = {case.name: [r for r in case.result if isinstance(r, junitparser.Error)] for case in cases}
    by_path = {}
    for finding in data["findings"]:
        by_path.setdefault(finding["path"], []).append(finding["code"])
    assert {name: [f.type for f in found] for name, found in failures.items() if found} == by_path
    assert sorted(name for name, found in errors.items() if found) == sorted(e["path"] for e in data["errors"])
    written = (suite.tests, suite.failures, suite.errors)
    suite.update_statistics()  # the counts a reader computes must be the ones written
    assert written == (suite.tests, suite.failures, suite.errors) == (
        data["summary"]["files"], data["summary"]["findings"], data["summary"]["errors"])
    clean = [case for case in cases if case.is_passed]
    assert clean and all(not case.result for case in clean)


def test_junit_for_a_clean_run_is_all_passing_cases(tmp_path, monkeypatch, capsys):
    junitparser = pytest.importorskip("junitparser")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "clean.py").write_text("import torch\n")
    code, out, _ = run(capsys, "--no-cache", "--output-format", "junit", "clean.py")
    assert code == 0
    (suite,) = list(junitparser.JUnitXml.fromstring(out.encode("utf-8")))
    assert [(case.name, case.is_passed) for case in suite] == [("clean.py", True)]


_GITLAB_SEVERITIES = {"info", "minor", "major", "critical", "blocker"}


def _check_code_quality(issues) -> None:
    """GitLab's required fields (docs: Code Quality report format) and their types."""
    assert isinstance(issues, list)
    for issue in issues:
        assert isinstance(issue["description"], str) and issue["description"]
        assert isinstance(issue["check_name"], str) and issue["check_name"]
        assert isinstance(issue["fingerprint"], str) and issue["fingerprint"]
        assert issue["severity"] in _GITLAB_SEVERITIES
        assert isinstance(issue["location"]["path"], str) and not issue["location"]["path"].startswith(("/", "./"))
        assert isinstance(issue["location"]["lines"]["begin"], int) and issue["location"]["lines"]["begin"] >= 1


def test_gitlab_report_has_the_code_quality_fields_and_distinct_stable_fingerprints(outputs):
    issues = json.loads(outputs["gitlab"])
    _check_code_quality(issues)
    data = json.loads(outputs["json"])
    assert len(issues) == len(data["findings"]) + len(data["errors"])
    fingerprints = [issue["fingerprint"] for issue in issues]
    assert len(set(fingerprints)) == len(fingerprints)
    again = json.loads(repo_output("--output-format", "gitlab", "fixtures"))
    assert [issue["fingerprint"] for issue in again] == fingerprints


def test_gitlab_fingerprints_survive_lines_moving_and_tell_repeats_apart(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(SEED + "\ndef again():\n" + "".join("    " + line + "\n" for line in SEED.splitlines()[1:]))
    _, out, _ = run(capsys, "--no-cache", "--output-format", "gitlab", "a.py")
    before = json.loads(out)
    _check_code_quality(before)
    assert len(before) == 2 and before[0]["fingerprint"] != before[1]["fingerprint"]
    (tmp_path / "a.py").write_text("# a new first line\n\n" + (tmp_path / "a.py").read_text())
    _, out, _ = run(capsys, "--no-cache", "--output-format", "gitlab", "./a.py")
    after = json.loads(out)
    assert [i["fingerprint"] for i in after] == [i["fingerprint"] for i in before]
    assert [i["location"]["lines"]["begin"] for i in after] == [i["location"]["lines"]["begin"] + 2 for i in before]
    assert {i["location"]["path"] for i in after} == {"a.py"}


@pytest.fixture
def two(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(TWO)
    (tmp_path / "b.py").write_text(SEED)
    return tmp_path


def test_show_fixes_lists_the_available_fixes_by_file_and_rule_when_checking(two, capsys):
    code, out, _ = run(capsys, "--no-cache", "--show-fixes", "--output-format", "concise", "--select", "ALL", "a.py", "b.py")
    assert code == 1
    assert out.splitlines() == [
        "a.py:3:1: DDP101 [*] optimizer `opt` built before `model.cuda()` (line 4)",
        "a.py:5:1: DDP002 [*] optimizer `opt2` has state before `model.half()` (line 6)",
        "b.py:3:1: DDP101 [*] optimizer `opt` built before `model.cuda()` (line 4)",
        "",
        "Fixes available for 3 findings:",
        "- a.py:",
        "    1 × DDP002 (stateful-optimizer-before-move)",
        "    1 × DDP101 (optimizer-before-move)",
        "- b.py:",
        "    1 × DDP101 (optimizer-before-move)",
        "",
        "Found 3 findings in 2 files.",
        "[*] 3 fixable with the `--fix` option.",
    ]


def test_show_fixes_lists_the_fixes_a_diff_would_make_and_those_fix_made(two, capsys):
    block = ["- a.py:", "    2 × DDP101 (optimizer-before-move)", "- b.py:", "    1 × DDP101 (optimizer-before-move)", ""]
    code, out, err = run(capsys, "--no-cache", "--show-fixes", "--diff", "--select", "DDP101", "a.py", "b.py")
    assert code == 1 and out.startswith("--- a/a.py")
    assert err.splitlines() == ["", "Would fix 3 findings:", *block,
                                "Found 3 findings in 2 files (3 would be fixed, 0 would remain)."]
    code, out, _ = run(capsys, "--no-cache", "--show-fixes", "--fix", "--select", "DDP101", "--output-format", "grouped",
                       "a.py", "b.py")
    assert code == 0
    assert out.splitlines() == ["", "Fixed 3 findings:", *block, "Found 3 findings in 2 files (3 fixed, 0 remaining)."]


def test_show_fixes_says_nothing_without_fixes_or_with_quiet(two, capsys):
    _, out, _ = run(capsys, "--no-cache", "--show-fixes", "--select", "DDP201", "--output-format", "concise", ".")
    assert "Fixes available" not in out
    _, out, _ = run(capsys, "--no-cache", "--show-fixes", "-q", "--output-format", "concise", ".")
    assert "Fixes available" not in out and "Found" not in out
