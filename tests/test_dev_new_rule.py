"""`python -m ddp_lint.dev new-rule` writes a draft rule that a copy of the repository accepts: its rule
examples, README row, table row, fixture folder and snapshot pass their tests there, and `ddp-lint
rule` shows it. Bad arguments and a second run are refused with one line and exit 2, writing nothing.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ddp_lint import catalog as cat
from ddp_lint.dev.__main__ import main
from ddp_lint.dev.new_rule import READABLE_KINDS

REPO = Path(__file__).resolve().parent.parent
COPIED = ("ddp_lint", "tests", "fixtures", "README.md", "pyproject.toml")


def _run(copy: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """The repository's package, tests, fixtures and README, with the draft rule DDP199 added."""
    root = tmp_path_factory.mktemp("repo")
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, root / name)
    added = _run(root, "-m", "ddp_lint.dev", "new-rule", "DDP199", "throwaway-rule")
    assert added.returncode == 0, added.stderr
    return root


def test_new_rule_passes_its_tests_in_the_copy(copy):
    result = _run(copy, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                  "tests/test_rule_examples.py", "tests/test_fixtures.py", "tests/test_snapshots.py",
                  "-k", "DDP199 or readme or every_rule or every_fixture_folder")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    # the one INVALID example stays a strict xfail until accepts() is written
    assert " passed" in result.stdout and "1 xfailed" in result.stdout, result.stdout[-2000:]


def test_new_rule_is_documented_by_the_cli_in_the_copy(copy):
    shown = _run(copy, "-m", "ddp_lint", "rule", "DDP199")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("DDP199 throwaway-rule (warning)\n")
    listed = _run(copy, "-m", "ddp_lint", "rules")
    assert "DDP199  warning  throwaway-rule" in listed.stdout


def test_second_run_is_refused_and_changes_nothing(copy):
    before = {p: p.read_bytes() for p in (copy / "README.md", copy / "ddp_lint" / "rules" / "table.py")}
    again = _run(copy, "-m", "ddp_lint.dev", "new-rule", "DDP199", "throwaway-rule")
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "DDP199" in again.stderr
    other_code = _run(copy, "-m", "ddp_lint.dev", "new-rule", "DDP198", "throwaway-rule")
    assert other_code.returncode == 2 and "named throwaway-rule already" in other_code.stderr
    assert before == {p: p.read_bytes() for p in before}
    assert not list((copy / "ddp_lint" / "rules").glob("ddp198_*.py"))


@pytest.mark.parametrize("args", [
    ["DDP19", "some-rule"],  # not DDPnnn
    ["DDP106", "Some_Rule"],  # not kebab-case
    ["DDP101", "some-rule"],  # in the table already
    ["DDP106", "optimizer-before-move"],  # the name of DDP101
    ["DDP106", "some-rule", "--severity", "error"],  # DDP1xx are warnings
    ["DDP306", "some-rule"],  # no severity for DDP3xx
    ["DDP106", "some-rule", "--reads", "home"],  # no rule reports `.cpu()`
    ["DDP106"],
], ids=lambda args: " ".join(args))
def test_bad_arguments_exit_2_with_one_line(args, capsys):
    try:
        code = main(["new-rule", *args])
    except SystemExit as exc:  # argparse's own checks
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "error: " in err, err


def test_every_kind_a_rule_can_read_has_an_example_placement():
    # a new catalog kind needs a line in new_rule._PLACEMENTS, or new-rule cannot write its examples
    assert set(READABLE_KINDS) == {kind.value for kind in cat.PlacementKind} - {cat.HOME.value} | {cat.SYNC_WRAPPER}
