"""The launcher end to end: a hung rank stopped at the timeout and cleaned up, the script's own failure
reported, `--max-steps` stopping a correct script, directly and through torchrun.

All four launches start together: the hung one spends its time asleep, the others importing torch.
"""
from __future__ import annotations

import os
import time

import pytest

from ddp_lint.runtime.launcher import is_alive
from runtime_harness import LAUNCH_TIMEOUT, REPO, codes, command, run_all

SUPPORT = os.path.join(REPO, "tests", "runtime", "support")
HANG_TIMEOUT = 20


def _processes_running(script_name: str) -> list:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                cmdline = handle.read().decode(errors="replace")
        except OSError:
            continue
        if script_name in cmdline and is_alive(int(pid)):
            found.append((int(pid), cmdline.replace("\0", " ")))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="process-tree cleanup is checked through /proc")
def test_hung_rank_timeout_script_failure_and_max_steps() -> None:
    started = time.monotonic()
    hung, crash, stopped, torchrun_single = run_all([
        command("run", os.path.join(SUPPORT, "hung_rank.py"), "--nproc-per-node", "2", "--timeout", str(HANG_TIMEOUT)),
        command("run", os.path.join(SUPPORT, "crash_after_step.py"), "--timeout", str(LAUNCH_TIMEOUT)),
        command("run", os.path.join(SUPPORT, "long_loop.py"), "--max-steps", "5", "--timeout", str(LAUNCH_TIMEOUT)),
        command("run", os.path.join(SUPPORT, "long_loop.py"), "--max-steps", "3", "--launcher", "torchrun",
                "--timeout", str(LAUNCH_TIMEOUT)),
    ])

    # A hung rank does not hang the command: both ranks started, both were stopped at the timeout,
    # and no process of the run is left behind.
    report = hung.json()
    assert report["timed_out"] is True and report["script_exit_code"] == 124 and hung.returncode == 1
    assert report["unfinished_ranks"] == [0, 1], report
    assert time.monotonic() - started < HANG_TIMEOUT + 60
    time.sleep(0.5)
    assert _processes_running("hung_rank.py") == []

    # The script's own failure: no finding, but exit code 1, its error and its last lines.
    report = crash.json()
    assert codes(report) == [] and report["script_exit_code"] == 1 and crash.returncode == 1
    assert report["errors"] == {"0": "ValueError: data loader ran dry"}
    script = os.path.join(SUPPORT, "crash_after_step.py")
    assert report["output_tail"][-3:] == [f'  File "{script}", line 13, in <module>',
                                          '    raise ValueError("data loader ran dry")',
                                          "ValueError: data loader ran dry"]
    assert "step 2" in report["output_tail"]

    # --max-steps ends a correct script cleanly, directly or through torchrun.
    for done, steps in ((stopped, 5), (torchrun_single, 3)):
        report = done.json()
        assert (report["script_exit_code"], report["steps"], codes(report)) == (0, steps, [])
        assert done.returncode == 0
