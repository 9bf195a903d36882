"""`ddp-lint verify` runs the fixed copy beside the original (files next to the script are found, the copy
is removed afterwards, even when interrupted) and says what it saw when no optimizer step ran."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from runtime_harness import LAUNCH_TIMEOUT, REPO, command, run_all, running

pytestmark = pytest.mark.slow

READS_A_FILE_BESIDE_ITSELF = '''\
from pathlib import Path

import torch
from torch import nn

lr = float((Path(__file__).parent / "cfg.txt").read_text())
model = nn.Linear(4, 2)
optimizer = torch.optim.Adagrad(model.parameters(), lr=lr)
model.double()
for step in range(3):
    optimizer.zero_grad()
    model(torch.randn(8, 4, dtype=torch.float64)).pow(2).mean().backward()
    optimizer.step()
'''


def test_fixed_copy_runs_beside_the_original_and_is_removed(tmp_path) -> None:
    script = tmp_path / "train.py"
    script.write_text(READS_A_FILE_BESIDE_ITSELF)
    (tmp_path / "cfg.txt").write_text("0.1\n")
    plain = tmp_path / "plain.py"
    plain.write_text('print("no model here")\n')
    verify, no_step = run_all([command("verify", str(script), "--timeout", str(LAUNCH_TIMEOUT)),
                               command("verify", str(plain), "--timeout", str(LAUNCH_TIMEOUT))])
    result = verify.json()
    # The fixed run found cfg.txt: it trains, and the verdict blames nothing on the fix.
    assert result["fixes_applied"] == 1, result
    assert result["verdict"] == ("original: optimizer state does not match its parameters; "
                                 "fixed: trains, 0 findings"), result["verdict"]
    assert result["fixed"]["run"]["script_exit_code"] == 0 and verify.returncode == 0
    assert sorted(os.listdir(tmp_path)) == ["cfg.txt", "plain.py", "train.py"]
    # A script that never steps an optimizer is not said to train.
    assert no_step.json()["verdict"] == "no fix applied (nothing to fix); original: no optimizer step ran, 0 findings"


def test_an_interrupted_verify_removes_the_fixed_copy(tmp_path) -> None:
    script = tmp_path / "train.py"
    script.write_text(READS_A_FILE_BESIDE_ITSELF.replace("range(3)", "range(10**9)"))
    (tmp_path / "cfg.txt").write_text("0.1\n")
    environ = dict(os.environ, PYTHONPATH=REPO, PYTHONWARNINGS="ignore")
    proc = subprocess.Popen(command("verify", str(script), "--timeout", str(LAUNCH_TIMEOUT)), cwd=REPO, env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    fixed = tmp_path / ".train.ddp-lint-fixed.py"
    started = time.monotonic()
    while not fixed.exists():
        assert time.monotonic() - started < LAUNCH_TIMEOUT and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    time.sleep(2)  # both runs under way
    proc.send_signal(signal.SIGTERM)  # what SLURM or a CI runner sends
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in stderr, stderr[-2000:]
    assert sorted(os.listdir(tmp_path)) == ["cfg.txt", "train.py"]
    time.sleep(0.5)
    assert running(str(tmp_path)) == []


