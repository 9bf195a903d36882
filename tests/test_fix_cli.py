"""`--fix`, `--diff` and stdin: what lands, what is refused, and that files are never damaged."""
import io
import os
import shutil
import stat
import subprocess
import sys

import pytest

from cli_run import run

SEED = """import torch

model = Net()
# the optimizer
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.cuda()
train(model, optimizer)
"""
FIXED = """import torch

model = Net()
model.cuda()
# the optimizer
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train(model, optimizer)
"""


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_fix_rewrites_and_reports_what_landed(cwd, capsys):
    (cwd / "s.py").write_text(SEED)
    code, out, _ = run(capsys, "--no-cache", "--fix", "s.py")
    assert (cwd / "s.py").read_text() == FIXED
    assert code == 0 and "(1 fixed, 0 remaining)" in out
    assert run(capsys, "--no-cache", "s.py")[0] == 0


def test_fix_across_worker_processes_writes_every_file_and_counts_every_fix(cwd, capsys):
    for i in range(40):
        (cwd / f"s{i}.py").write_text(SEED)
    (cwd / "clean.py").write_text(FIXED)
    code, out, _ = run(capsys, "--no-cache", "--fix", "-j", "2", ".")
    assert code == 0 and out.strip() == "Found 40 findings in 41 files (40 fixed, 0 remaining)."
    assert all((cwd / f"s{i}.py").read_text() == FIXED for i in range(40))
    assert (cwd / "clean.py").read_text() == FIXED


def test_exit_non_zero_on_fix(cwd, capsys):
    (cwd / "s.py").write_text(SEED)
    assert run(capsys, "--no-cache", "--fix", "--exit-non-zero-on-fix", "s.py")[0] == 1


def test_diff_prints_and_writes_nothing(cwd, capsys):
    (cwd / "s.py").write_text(SEED)
    code, out, err = run(capsys, "--no-cache", "--diff", "s.py")
    assert (cwd / "s.py").read_text() == SEED
    assert code == 1 and out.startswith("--- a/s.py\n+++ b/s.py\n") and "+model.cuda()" in out
    assert err.rstrip().endswith("(1 would be fixed, 0 would remain).")


def test_stdin_fix_goes_to_stdout(cwd, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SEED.encode())))
    code, out, err = run(capsys, "--no-cache", "--fix", "-")
    assert out == FIXED and code == 0


def test_unsafe_fix_needs_the_flag(cwd, capsys):
    unsafe = SEED.replace("optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
                          "optimizer = build_optimizer(cfg, model)\nscheduler = StepLR(optimizer, 1)")
    (cwd / "u.py").write_text(unsafe)
    code, out, _ = run(capsys, "--no-cache", "--fix", "u.py")
    assert (cwd / "u.py").read_text() == unsafe and code == 1
    code, out, _ = run(capsys, "--no-cache", "--fix", "--unsafe-fixes", "u.py")
    assert code == 0 and "model.cuda()\n# the optimizer\noptimizer = build_optimizer" in (cwd / "u.py").read_text()


def test_noqa_finding_is_neither_reported_nor_fixed(cwd, capsys):
    text = SEED.replace("lr=0.1)\n", "lr=0.1)  # noqa: DDP101\n")
    (cwd / "n.py").write_text(text)
    assert run(capsys, "--no-cache", "--fix", "n.py")[0] == 0
    assert (cwd / "n.py").read_text() == text


@pytest.mark.parametrize(
    "transform",
    [
        lambda s: s.replace("\n", "\r\n").encode(),
        lambda s: b"\xef\xbb\xbf" + s.encode(),
        lambda s: ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + s).encode("latin-1"),
        lambda s: s.rstrip("\n").encode(),
    ],
    ids=["crlf", "bom", "latin1-cookie", "no-final-newline"],
)
def test_fix_keeps_encoding_bom_line_endings_and_final_newline(cwd, capsys, transform):
    path = cwd / "e.py"
    path.write_bytes(transform(SEED))
    os.chmod(path, 0o751)
    assert run(capsys, "--no-cache", "--fix", "e.py")[0] == 0
    assert path.read_bytes() == transform(FIXED)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751


def test_read_only_file_is_an_error_and_left_intact(cwd, capsys):
    path = cwd / "r.py"
    path.write_text(SEED)
    os.chmod(path, 0o444)
    code, out, _ = run(capsys, "--no-cache", "--fix", "r.py")
    assert code == 2 and "r.py: error: file is read-only" in out
    assert path.read_text() == SEED


def test_failed_write_leaves_original_and_no_temporary(cwd, capsys, monkeypatch):
    path = cwd / "w.py"
    path.write_text(SEED)

    def refuse(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    code, out, _ = run(capsys, "--no-cache", "--fix", "w.py")
    assert code == 2 and "write failed" in out
    assert path.read_text() == SEED
    assert sorted(p.name for p in cwd.iterdir()) == ["w.py"]


def test_two_concurrent_fix_runs_leave_each_file_old_or_new(tmp_path):
    for i in range(40):
        (tmp_path / f"f{i}.py").write_text(SEED)
    command = [sys.executable, "-m", "ddp_lint", "--no-cache", "--fix", str(tmp_path)]
    procs = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(2)]
    for proc in procs:
        proc.wait(timeout=120)
    for i in range(40):
        assert (tmp_path / f"f{i}.py").read_text() in (SEED, FIXED)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ddp-lint-")]


def test_syntax_error_file_is_not_written(cwd, capsys):
    bad = SEED + "def broken(:\n"
    (cwd / "b.py").write_text(bad)
    code, out, _ = run(capsys, "--no-cache", "--fix", "b.py")
    assert code == 2 and (cwd / "b.py").read_text() == bad


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("where", [".", "./", "sub/..", "ABSOLUTE"])
def test_diff_of_a_folder_applies_with_git_and_stdout_holds_only_the_diff(cwd, capsys, where):
    # `a/./train.py` made git refuse the patch (`invalid path`), and the findings followed the diff on stdout.
    (cwd / "sub").mkdir()
    (cwd / "train.py").write_text(SEED)
    (cwd / "sub" / "other.py").write_text(SEED)
    folder = str(cwd) if where == "ABSOLUTE" else where
    code, out, err = run(capsys, "--no-cache", "--diff", folder)
    assert code == 1
    headers = [line for line in out.splitlines() if line.startswith(("--- ", "+++ "))]
    assert headers == ["--- a/sub/other.py", "+++ b/sub/other.py", "--- a/train.py", "+++ b/train.py"]
    assert all(line[:1] in "-+@ " for line in out.splitlines()), out  # nothing but the diff
    assert "would be fixed" in err and "would be fixed" not in out
    subprocess.run(["git", "init", "-q"], cwd=cwd, check=True)
    patch = cwd / "fix.patch"
    patch.write_text(out)
    applied = subprocess.run(["git", "apply", "fix.patch"], cwd=cwd, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    assert (cwd / "train.py").read_text() == FIXED and (cwd / "sub" / "other.py").read_text() == FIXED
