"""Shared helpers for the front-end tests: run the real `ddp-lint` and `flake8` commands as subprocesses."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
NOTEBOOKS = FIXTURES / "notebooks"

SEED = """import torch

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.cuda()
"""
SEED_FIXED = """import torch

model = Net()
model.cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""
CLEAN = SEED_FIXED


def _env():
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the installed package and its entry points, as a user has them
    return env


def run_command(args, cwd, **kwargs):
    return subprocess.run(
        [str(a) for a in args], cwd=str(cwd), capture_output=True, text=True, env=_env(), timeout=300, **kwargs
    )


@pytest.fixture
def ddp_lint():
    """Runs `python -m ddp_lint ARGS` in `cwd`; returns the CompletedProcess."""

    def run(*args, cwd=REPO):
        return run_command([sys.executable, "-m", "ddp_lint", *args], cwd)

    return run


@pytest.fixture
def ddp_lint_json(ddp_lint):
    """Runs `ddp-lint check --output-format json --no-cache ARGS`; returns (exit code, parsed document)."""

    def run(*args, cwd=REPO):
        done = ddp_lint("check", "--no-cache", "--output-format", "json", *args, cwd=cwd)
        return done.returncode, json.loads(done.stdout)

    return run


@pytest.fixture
def flake8():
    """Runs the real `flake8 --isolated ARGS` (config files ignored) in `cwd`."""

    def run(*args, cwd=REPO):
        return run_command([sys.executable, "-m", "flake8", "--isolated", *args], cwd)

    return run
