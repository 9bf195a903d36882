"""The rank entry point leaves through os._exit (torch 2.13's gloo teardown can abort a finished rank),
so everything interpreter teardown would have done for the script is checked here: atexit handlers
run, buffered output is flushed, and the exit status and message are what plain Python gives.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from runtime_harness import REPO

SCRIPT = os.path.join(REPO, "tests", "runtime", "support", "exit_paths.py")


def _run(interpreter_args: list, mode: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": REPO}
    env.pop("DDP_LINT_MONITOR", None)
    return subprocess.run([sys.executable, *interpreter_args, SCRIPT, mode], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["clean", "message", "code", "raise"])
def test_bootstrap_ends_a_script_as_plain_python_does(mode: str) -> None:
    plain = _run([], mode)
    monitored = _run(["-m", "ddp_lint.runtime.bootstrap"], mode)
    assert monitored.returncode == plain.returncode == {"clean": 0, "message": 1, "code": 3, "raise": 1}[mode]
    assert monitored.stdout == plain.stdout == "unflushed outputatexit ran\n"
    if mode == "message":
        assert monitored.stderr == plain.stderr == "bad input\n"
    if mode == "raise":
        assert monitored.stderr.splitlines()[-1] == plain.stderr.splitlines()[-1] == "KeyError: 'missing'"
