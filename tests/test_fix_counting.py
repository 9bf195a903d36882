"""What `--fix` counts and says: fixes counted by the plans applied (never by matching statement text),
the ruff-like summary (`Found N findings (X fixed, Y remaining).`), and the fixes a run left out."""
import json

import pytest

from ddp_lint.cli import main
from ddp_lint.fixer import apply
from ddp_lint.fixer.apply import fix_source

PAIR = """    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.cuda()
    return optimizer
"""
# The same statement, with no automatic fix: the placement is in a loop body.
REFUSED = """    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        model.cuda()
    return optimizer
"""


def program(fixable: int, refused: int = 1) -> str:
    """`fixable` functions with the identical fixable pair, then `refused` with the identical statement
    whose finding stays (its fix is refused), after a module-level `import torch`."""
    functions = [f"def f{i}(model):\n{PAIR}" for i in range(fixable)]
    functions += [f"def g{i}(model):\n{REFUSED}" for i in range(refused)]
    return "import torch\n\n\n" + "\n\n".join(functions)


THREE = program(3)
ONE = program(1)
UNSAFE = """import torch
class T:
    def __init__(self, model):
        self.model = model
        self.opt = torch.optim.Adam(self.model.parameters())
        self.model.cuda()
"""
UNSAFE_FIXED = """import torch
class T:
    def __init__(self, model):
        self.model = model
        self.model.cuda()
        self.opt = torch.optim.Adam(self.model.parameters())
"""
HIDDEN_1 = "1 hidden fix can be enabled with the `--unsafe-fixes` option."


def run(capsys, *args):
    code = main(["--no-cache", "-j", "1", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_identical_statements_in_three_functions_are_all_counted():
    """Three identical fixable pairs and one identical statement left unfixable: the text-keyed count
    saw the statement still reported and counted none of the three."""
    result = fix_source(THREE)
    assert result.source.count("    model.cuda()\n    optimizer = torch.optim.SGD") == 3
    assert len(result.remaining) == 1 and "loop body" in result.remaining[0].message
    assert result.applied == 3


def test_a_changed_file_reports_at_least_one_fix():
    result = fix_source(ONE)
    assert result.source != ONE
    assert result.applied == 1


def test_all_fixed_without_a_reappearing_text_still_counts_each_fix():
    result = fix_source(program(3, refused=0))
    assert result.applied == 3 and result.remaining == []


def test_a_fix_that_leaves_its_finding_behind_writes_nothing_and_counts_nothing(monkeypatch):
    """A fix that changes its own statement's text but leaves the finding: the stuck check must not
    rely on the text it had before (the text-keyed check kept this result and counted 1 fix)."""
    monkeypatch.setattr(apply, "apply_plans", lambda module, plans, positions=None: module.code.replace("lr=0.1", "lr=0.10", 1))
    source = program(1, refused=0)
    result = fix_source(source)
    assert result.source == source and result.applied == 0 and len(result.remaining) == 1


def test_fix_summary_says_fixed_and_remaining(cwd, capsys):
    (cwd / "t.py").write_text(THREE)
    code, out, _ = run(capsys, "--fix", "t.py")
    assert out.rstrip().endswith("Found 4 findings in 1 file (3 fixed, 1 remaining).")
    assert "hidden fix" not in out and "[*]" not in out
    assert code == 1  # a finding remains: exit codes are unchanged
    assert (cwd / "t.py").read_text() == fix_source(THREE).source


def test_diff_summary_says_what_would_be_fixed(cwd, capsys):
    (cwd / "t.py").write_text(THREE)
    code, out, err = run(capsys, "--diff", "t.py")
    assert err.rstrip().endswith("Found 4 findings in 1 file (3 would be fixed, 1 would remain).")
    assert code == 1 and (cwd / "t.py").read_text() == THREE


def test_fix_with_only_unsafe_fixes_says_they_are_hidden(cwd, capsys):
    (cwd / "u.py").write_text(UNSAFE)
    code, out, _ = run(capsys, "--output-format", "json", "u.py")
    assert json.loads(out)["findings"][0]["fix"]["applicability"] == "unsafe"
    code, out, _ = run(capsys, "--fix", "u.py")
    assert (cwd / "u.py").read_text() == UNSAFE
    assert out.rstrip().splitlines()[-2:] == ["Found 1 finding in 1 file.", HIDDEN_1]
    assert code == 1
    code, out, _ = run(capsys, "--fix", "--unsafe-fixes", "u.py")
    assert (cwd / "u.py").read_text() == UNSAFE_FIXED
    assert code == 0 and out.strip() == "Found 1 finding in 1 file (1 fixed, 0 remaining)."


def test_hidden_fixes_are_counted_in_the_plural(cwd, capsys):
    (cwd / "u.py").write_text(UNSAFE)
    (cwd / "v.py").write_text(UNSAFE)
    _, out, _ = run(capsys, "--fix", ".")
    assert out.rstrip().endswith("2 hidden fixes can be enabled with the `--unsafe-fixes` option.")


def test_check_says_what_fix_would_fix_and_what_is_hidden(cwd, capsys):
    (cwd / "t.py").write_text(THREE)
    code, out, _ = run(capsys, "t.py")
    assert out.rstrip().splitlines()[-2:] == ["Found 4 findings in 1 file.", "[*] 3 fixable with the `--fix` option."]
    assert code == 1
    (cwd / "u.py").write_text(UNSAFE)
    _, out, _ = run(capsys, ".")
    assert out.rstrip().endswith(
        "[*] 3 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option)."
    )
    _, out, _ = run(capsys, "--unsafe-fixes", ".")
    assert out.rstrip().endswith("[*] 4 fixable with the `--fix` option.")


def test_check_with_only_unsafe_fixes_names_the_hidden_ones(cwd, capsys):
    (cwd / "u.py").write_text(UNSAFE)
    _, out, _ = run(capsys, "u.py")
    assert out.rstrip().endswith("No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).")


def test_check_with_no_fix_available_prints_no_fixable_line(cwd, capsys):
    (cwd / "r.py").write_text(program(0, refused=1))
    _, out, _ = run(capsys, "r.py")
    assert out.rstrip().splitlines()[-1] == "Found 1 finding in 1 file."


def test_cached_findings_keep_what_is_fixable(cwd, capsys):
    (cwd / "t.py").write_text(THREE)
    (cwd / "u.py").write_text(UNSAFE)
    outputs = []
    for _ in range(2):  # the second run reads every finding back from the cache
        assert main(["--cache-dir", str(cwd / ".cache"), "-j", "1", "."]) == 1
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert outputs[1].rstrip().endswith("(1 hidden fix can be enabled with the `--unsafe-fixes` option).")


def test_json_summary_carries_fixed_remaining_and_hidden(cwd, capsys):
    (cwd / "t.py").write_text(THREE)
    (cwd / "u.py").write_text(UNSAFE)
    _, out, _ = run(capsys, "--output-format", "json", "--fix", ".")
    summary = json.loads(out)["summary"]
    assert summary["fixed"] == 3 and summary["remaining"] == 2 and summary["findings"] == 2
    assert summary["hidden_unsafe_fixes"] == 1 and summary["fixable"] == 0 and summary["mode"] == "fix"
    assert summary["by_code"] == {"DDP101": 2} and summary["files"] == 2 and summary["errors"] == 0
    (cwd / "t.py").write_text(THREE)
    _, out, _ = run(capsys, "--output-format", "json", "t.py", "u.py")
    summary = json.loads(out)["summary"]
    assert summary["fixed"] == 0 and summary["remaining"] == 5 and summary["fixable"] == 3
    assert summary["hidden_unsafe_fixes"] == 1 and summary["mode"] == "check"
