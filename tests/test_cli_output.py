"""The command line as ruff users expect it: concise and full output, --statistics, -q, the clean-run
line, --help, `rules --output-format json`, and rule documentation that cites only what ships."""
import json
import re
from pathlib import Path

import pytest

from ddp_lint.cli import main
from cli_run import run

REPO = Path(__file__).resolve().parent.parent
SEED = "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.cuda()\n"
STATEFUL = SEED + "opt2 = torch.optim.Adagrad(model.parameters())\nmodel.half()\n"


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(SEED)
    (tmp_path / "b.py").write_text(STATEFUL)
    return tmp_path


def test_concise_is_one_line_per_finding_naming_code_what_and_where(cwd, capsys):
    code, out, _ = run(capsys, "--no-cache", "--output-format", "concise", "a.py")
    assert code == 1
    first, *rest = out.splitlines()
    assert first == "a.py:3:1: DDP101 [*] optimizer `opt` built before `model.cuda()` (line 4)"
    assert rest == ["Found 1 finding in 1 file.", "[*] 1 fixable with the `--fix` option."]


def test_full_puts_the_explanation_related_lines_and_fix_under_the_concise_line(cwd, capsys):
    code, out, _ = run(capsys, "--no-cache", "--no-show-source", "a.py")
    lines = out.splitlines()
    assert lines[0] == "a.py:3:1: DDP101 [*] optimizer `opt` built before `model.cuda()` (line 4)"
    assert lines[1].startswith("  optimizer `opt` (SGD) is built on `model`'s parameters before `model.cuda()` on line 4")
    assert lines[2] == "  --> a.py:4:1: placement: `model.cuda()`"
    assert lines[3] == "  = fix: move the optimizer after line 4"


def test_statistics_count_by_rule(cwd, capsys):
    code, out, _ = run(capsys, "--no-cache", "--statistics", "a.py", "b.py")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "2\tDDP101\t[*] optimizer-before-move"
    assert re.fullmatch(r"1\tDDP002\t\[[ *]\] stateful-optimizer-before-move", lines[1])
    assert lines[2].startswith("Found 3 findings in 2 files")


def test_quiet_prints_findings_only(cwd, capsys):
    code, out, _ = run(capsys, "--no-cache", "-q", "--output-format", "concise", "a.py")
    assert code == 1 and out.splitlines() == ["a.py:3:1: DDP101 [*] optimizer `opt` built before `model.cuda()` (line 4)"]


def test_clean_run_says_all_checks_passed(cwd, capsys):
    (cwd / "c.py").write_text("import torch\nmodel = Net().cuda()\nopt = torch.optim.SGD(model.parameters())\n")
    assert run(capsys, "--no-cache", "c.py") == (0, "All checks passed!\n", "")
    assert run(capsys, "--no-cache", "--output-format", "concise", "c.py") == (0, "All checks passed!\n", "")


def test_help_describes_every_option_and_lists_the_commands(capsys):
    from ddp_lint.cli import _check_parser

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("rule CODE", "rules", "run SCRIPT", "verify SCRIPT", "check"):
        assert command in out, command
    for action in _check_parser()._actions:
        if action.option_strings:
            assert action.help, action.option_strings  # every option is described
            assert action.option_strings[-1] in out


def test_rules_as_json(capsys):
    code, out, _ = run(capsys, "rules", "--output-format", "json")
    rules = json.loads(out)
    assert code == 0 and len(rules) >= 11
    ddp201 = next(r for r in rules if r["code"] == "DDP201")
    assert ddp201["severity"] == "info" and ddp201["default"] is False and ddp201["name"] == "optimizer-before-wrap"
    ddp101 = next(r for r in rules if r["code"] == "DDP101")
    assert ddp101["default"] is True and "## Fix safety" in ddp101["documentation"]


def test_rule_documentation_cites_only_what_the_repository_contains(capsys):
    """It cited "semantics rows 7-9", a table that lives outside the repository."""
    code, out, _ = run(capsys, "rules", "--output-format", "json")
    for rule in json.loads(out):
        doc = rule["documentation"]
        assert "semantics row" not in doc, rule["code"]
        for reference in re.findall(r"`([\w./-]+\.(?:py|md|toml))`", doc):
            assert (REPO / reference).exists() or "/" not in reference, (rule["code"], reference)
        if "README" in doc:
            quoted = re.findall(r"README's \"([^\"]+)\"", doc)
            readme = (REPO / "README.md").read_text()
            assert all(title in readme for title in quoted), (rule["code"], quoted)
