"""The launcher end to end: a hung rank stopped at the timeout and cleaned up, the script's own failure
reported, `--max-steps` stopping a correct script, directly and through torchrun.

All four launches start together: the hung one spends its time asleep, the others importing torch.
The hung one's timeout counts from the moment both its ranks have written their start records
(LaunchSpec.start_timeout), so however long the loaded machine takes to start them, the run is
stopped with both ranks started; a fixed timeout from the launch could expire before they were.
"""
from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from ddp_lint.runtime.launcher import LaunchSpec, launch
from ddp_lint.runtime.report import build_report, exit_status, render_json
from runtime_harness import LAUNCH_TIMEOUT, REPO, codes, command, run_all, running

SUPPORT = os.path.join(REPO, "tests", "runtime", "support")
HANG_TIMEOUT = 5  # counted from the moment both ranks have started


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="process-tree cleanup is checked through /proc")
def test_hung_rank_timeout_script_failure_and_max_steps() -> None:
    hung_script = os.path.join(SUPPORT, "hung_rank.py")
    # What `ddp-lint run --nproc-per-node 2` does, with the timeout counted from the ranks' start.
    spec = LaunchSpec(script=hung_script, nproc=2, timeout=HANG_TIMEOUT, start_timeout=LAUNCH_TIMEOUT)
    with ThreadPoolExecutor(max_workers=1) as pool:
        hung_run = pool.submit(launch, spec)
        crash, stopped, torchrun_single = run_all([
            command("run", os.path.join(SUPPORT, "crash_after_step.py"), "--timeout", str(LAUNCH_TIMEOUT)),
            command("run", os.path.join(SUPPORT, "long_loop.py"), "--max-steps", "5", "--timeout", str(LAUNCH_TIMEOUT)),
            command("run", os.path.join(SUPPORT, "long_loop.py"), "--max-steps", "3", "--launcher", "torchrun",
                    "--timeout", str(LAUNCH_TIMEOUT)),
        ])
        hung = hung_run.result()

    # A hung rank does not hang the command: both ranks started, both were stopped at the timeout,
    # and no process of the run is left behind.
    hung_report = build_report(hung_script, 2, hung, spec.timeout)
    report = json.loads(render_json(hung_report))
    assert report["timed_out"] is True and report["script_exit_code"] == 124 and exit_status(hung_report) == 1
    assert report["unfinished_ranks"] == [0, 1], (report, hung.all_started_after)
    assert hung.all_started_after is not None, report  # both ranks started within LAUNCH_TIMEOUT
    assert HANG_TIMEOUT <= hung.duration - hung.all_started_after < HANG_TIMEOUT + 60, hung.duration
    time.sleep(0.5)
    assert running("hung_rank.py") == []

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


@pytest.mark.parametrize("body, start_timeout, timed_out, exit_code",
                         [("exec sleep 60", 1.0, True, 124), ("exit 3", 60.0, False, 3)])
def test_start_timeout_bounds_ranks_that_never_start(tmp_path, body: str, start_timeout: float, timed_out: bool,
                                                      exit_code: int) -> None:
    # A stand-in interpreter that never runs the bootstrap: no rank ever writes its start record.
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\n{body}\n")
    python.chmod(0o755)
    spec = LaunchSpec(script=str(tmp_path / "train.py"), launcher="direct", timeout=0.1,
                      start_timeout=start_timeout, python=str(python))
    result = launch(spec)
    assert (result.timed_out, result.exit_code, result.all_started_after) == (timed_out, exit_code, None)
    if timed_out:  # stopped at the start deadline, not `timeout` after a start that never came
        assert start_timeout <= result.duration < start_timeout + 30 and result.killed
    else:  # a process that ends before its ranks start is not waited on until the start deadline
        assert result.duration < start_timeout
