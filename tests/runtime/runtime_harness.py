"""Shared by the runtime tests: the scenario table and a way to run `python -m ddp_lint.runtime` commands.

Commands run as subprocesses so that several launches of one scenario can overlap (each launch
spends most of its time importing torch), and each is bounded by a timeout of its own.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIOS_DIR = os.path.join(REPO, "tests", "runtime", "scenarios")
# Generous for a loaded 2-core CI machine: a 2-process launch takes 10-25 s there.
LAUNCH_TIMEOUT = 150


@dataclass(frozen=True)
class Scenario:
    name: str
    code: str  # the rule the original breaks
    nproc: int
    original: str  # what verify must say about the original
    fixable: bool = True  # whether `ddp-lint --fix` reorders it (DDP003/DDP004 have no automatic fix)
    original_fails: Optional[bool] = False  # the original crashes; None: not asserted
    gpu_only: bool = False

    def path(self, fixed: bool = False) -> str:
        return os.path.join(SCENARIOS_DIR, f"{self.name}{'_fixed' if fixed else ''}.py")


STALE = "optimizer stepped stale parameters, model never changed"

SCENARIOS: List[Scenario] = [
    Scenario("fsdp1_default", "DDP001", 2, STALE),
    Scenario("fully_shard", "DDP001", 2, STALE),
    Scenario("meta_to_empty", "DDP001", 1, STALE),
    Scenario("overwrite_flag", "DDP001", 1, STALE),
    Scenario("adagrad_cast", "DDP002", 1, "optimizer state does not match its parameters"),
    Scenario("loaded_state_cast", "DDP002", 1,
             "optimizer state does not match its parameters, crashed at step 1 (RuntimeError: ",
             original_fails=True),
    Scenario("ddp_convert_after_wrap", "DDP003", 2, "ranks trained apart: DDP's gradient hooks were lost",
             fixable=False),
    Scenario("ddp_discarded", "DDP004", 2, "ranks trained apart: the DDP wrapper was never used", fixable=False),
    Scenario("zero_bucket_view_cast", "DDP005", 2,
             "ranks trained apart: ZeRO's buckets no longer alias the parameters"),
    Scenario("deepcopy", "DDP001", 1, STALE),
    Scenario("weight_norm", "DDP001", 1,
             "optimizer stepped stale parameters, part of the model never trained (3 of 5 parameters changed)"),
]

GPU_ONLY: List[Scenario] = [
    Scenario("cuda_move_with_state", "DDP002", 1,
             "optimizer state does not match its parameters, crashed at step 1", original_fails=True,
             gpu_only=True),
    # NCCL rejects the CPU tensors consolidate_state_dict() broadcasts; the finding must come
    # whether or not this torch build crashes there.
    Scenario("zero_cpu_then_cuda", "DDP102", 2, "ZeRO kept its construction-time default device",
             original_fails=None, gpu_only=True),
]


def command(subcommand: str, script: str, *options: str, script_args: Sequence[str] = ()) -> List[str]:
    return [sys.executable, "-m", "ddp_lint.runtime", subcommand, *options, "--output-format", "json",
            script, *script_args]


@dataclass
class Completed:
    argv: List[str]
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Dict[str, object]:
        try:
            return json.loads(self.stdout)
        except ValueError:
            raise AssertionError(f"not JSON (exit {self.returncode}):\n{self.stdout}\n--- stderr ---\n"
                                 f"{self.stderr[-3000:]}") from None


def run_all(commands: Sequence[List[str]], timeout: float = 2 * LAUNCH_TIMEOUT + 60,
            env: Optional[Dict[str, str]] = None) -> List[Completed]:
    """Start every command at once and wait for all; each is killed if it outlives `timeout`."""
    environ = dict(os.environ if env is None else env)
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, environ.get("PYTHONPATH", "")) if p)
    environ.setdefault("PYTHONWARNINGS", "ignore")
    procs = [subprocess.Popen(argv, cwd=REPO, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True) for argv in commands]
    out: List[Completed] = []
    for argv, proc in zip(commands, procs):
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            stdout, stderr = proc.communicate()
            raise AssertionError(f"{argv} did not finish within {timeout}s; stderr:\n{stderr[-3000:]}")
        out.append(Completed(list(argv), proc.returncode, stdout, stderr))
    return out


def codes(document: Dict[str, object]) -> List[str]:
    return [str(f["code"]) for f in document["findings"]]  # type: ignore[union-attr,index]


def running(text: str) -> List[Tuple[int, str]]:
    """Live processes whose command line contains `text`: (pid, command line). What a test asserts
    empty after a run, so that no process of it is left behind."""
    from ddp_lint.runtime.launcher import is_alive

    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                cmdline = handle.read().decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and is_alive(int(pid)):
            found.append((int(pid), cmdline.replace("\0", " ")))
    return found
