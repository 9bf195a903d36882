"""One scenario per failure class: `run` proves the bug on the original and nothing on the fixed twin,
and `verify` (the real fixer plus two monitored runs) gives the expected verdict.

CPU tests use gloo and world size 2 only where the class needs ranks (DDP, ZeRO, FSDP). The same
scenarios run on CUDA with NCCL under the `gpu` marker, plus the two that only a GPU can show.
"""
from __future__ import annotations

import os

import pytest

from runtime_harness import GPU_ONLY, LAUNCH_TIMEOUT, REPO, SCENARIOS, SCENARIOS_DIR, Scenario, codes, command, run_all


def _launch_options(scenario: Scenario, *extra: str) -> list:
    return ["--nproc-per-node", str(scenario.nproc), "--timeout", str(LAUNCH_TIMEOUT), *extra]


def check_scenario(scenario: Scenario, device_args: tuple = (), backend: tuple = (), exact: bool = True) -> None:
    """`exact`: the CPU expectations to the letter. On CUDA the kernels differ (foreach paths, error
    wording), so only the finding, the outcome the verdict names, and the clean fix are required."""
    options = _launch_options(scenario, *backend)
    original_run, fixed_run, verify = run_all([
        command("run", scenario.path(), *options, script_args=device_args),
        command("run", scenario.path(fixed=True), *options, script_args=device_args),
        command("verify", scenario.path(), *options, script_args=device_args),
    ])

    # run: the original breaks the rule, on the line the static rule reports (the optimizer, or
    # the conversion/wrapper for DDP003/DDP004), and an error-class finding makes the exit code 1.
    report = original_run.json()
    assert scenario.code in codes(report), report
    assert original_run.returncode == 1, original_run.stderr[-2000:]
    finding = next(f for f in report["findings"] if f["code"] == scenario.code)
    assert finding["path"].endswith(f"{scenario.name}.py") and finding["line"] > 0
    assert sorted(finding["ranks"]) == list(range(scenario.nproc))
    if scenario.original_fails is not None and exact:
        assert (report["script_exit_code"] != 0) == scenario.original_fails, report

    # run: the hand-written fix is clean and the script succeeds.
    fixed = fixed_run.json()
    assert codes(fixed) == [], fixed
    assert fixed["script_exit_code"] == 0 and fixed_run.returncode == 0, fixed_run.stderr[-2000:]
    assert fixed["steps"] == 4

    # verify: the real fixer, both runs, the verdict.
    result = verify.json()
    static_lines = [s["line"] for s in result["original"]["static_findings"] if s["code"] == scenario.code]
    assert finding["line"] in static_lines, (finding, result["original"]["static_findings"])
    assert scenario.code in codes(result["original"]["run"]), result
    expected = scenario.original if exact else scenario.original.split(",")[0]
    if scenario.fixable:
        assert result["fixes_applied"] >= 1, result
        assert result["verdict"].startswith(f"original: {expected}"), result["verdict"]
        assert result["verdict"].endswith("; fixed: trains, 0 findings"), result["verdict"]
        assert codes(result["fixed"]["run"]) == [] and result["fixed"]["static_findings"] == []
        assert verify.returncode == 0, verify.stderr[-2000:]
    else:
        assert result["fixes_applied"] == 0 and result["fixed"] is None, result
        assert result["verdict"].startswith("not verified: no fix applied (no automatic fix for these findings"), \
            result["verdict"]
        assert f"so nothing was compared; original: {expected}" in result["verdict"], result["verdict"]
        if exact:
            assert result["verdict"].endswith(scenario.original), result["verdict"]
        assert verify.returncode == 4 == result["exit_code"]  # nothing was verified


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: f"{s.code}-{s.name}")
def test_scenario_cpu(scenario: Scenario) -> None:
    check_scenario(scenario)


@pytest.mark.slow
def test_verify_reports_equivalence_when_the_fix_changes_nothing_at_runtime() -> None:
    # SGD before a same-device .to() is only fragile (DDP101): the fixer still reorders it, and
    # both orders must train to bit-identical parameters.
    script = os.path.join(SCENARIOS_DIR, "fragile_move.py")
    run, verify = run_all([
        command("run", script, "--timeout", str(LAUNCH_TIMEOUT)),
        command("verify", script, "--timeout", str(LAUNCH_TIMEOUT)),
    ])
    assert codes(run.json()) == [] and run.returncode == 0
    result = verify.json()
    assert [s["code"] for s in result["original"]["static_findings"]] == ["DDP101"]
    assert result["fixes_applied"] == 1
    assert result["verdict"] == "equivalent: bit-identical parameters after 4 steps", result["verdict"]
    assert result["equivalent"] is True and verify.returncode == 0


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count()


def _needs_gpus(scenario: Scenario) -> None:
    if _gpu_count() < scenario.nproc:
        pytest.skip(f"needs {scenario.nproc} CUDA devices for NCCL at world size {scenario.nproc}")


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: f"{s.code}-{s.name}")
def test_scenario_cuda_nccl(scenario: Scenario) -> None:
    _needs_gpus(scenario)
    backend = ("--backend", "nccl") if scenario.nproc > 1 else ()
    check_scenario(scenario, device_args=("--device", "cuda"), backend=backend, exact=False)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("scenario", GPU_ONLY, ids=lambda s: f"{s.code}-{s.name}")
def test_gpu_only_scenario(scenario: Scenario) -> None:
    _needs_gpus(scenario)
    backend = ("--backend", "nccl") if scenario.nproc > 1 else ()
    check_scenario(scenario, device_args=("--device", "cuda"), backend=backend, exact=False)


@pytest.mark.slow
def test_example_with_a_silent_bug_does_not_train_and_its_fix_does() -> None:
    # One process keeps it cheap: fully_shard replaces the parameters at any world size.
    script = os.path.join(REPO, "examples", "runtime_silent_fully_shard.py")
    [verify] = run_all([command("verify", script, "--timeout", str(LAUNCH_TIMEOUT), script_args=("--device", "cpu"))])
    result = verify.json()
    assert result["verdict"] == ("original: optimizer stepped stale parameters, model never changed; "
                                 "fixed: trains, 0 findings"), result["verdict"]
    assert result["original"]["run"]["script_exit_code"] == 0  # silent: the script itself succeeds
    assert result["fixed"]["losses"][-1] < result["fixed"]["losses"][0]
    assert verify.returncode == 0
