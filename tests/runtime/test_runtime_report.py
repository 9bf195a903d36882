"""Merging ranks' findings, the text and JSON reports, exit codes, verdicts, and the command-line surface."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from ddp_lint.runtime import cli
from ddp_lint.runtime.findings import RuntimeRelated, RuntimeFinding, merge_findings
from ddp_lint.runtime.launcher import LaunchResult, LaunchSpec, build_command, script_lines
from ddp_lint.runtime.report import build_report, exit_status, render_json, render_text
from ddp_lint.runtime.verify import Side, StaticFinding, describe, model_status, verdict_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _finding(rank: int, step, message: str = "m", code: str = "DDP001", line: int = 7,
             outcome: str = "optimizer stepped stale parameters") -> dict:
    return RuntimeFinding(code, "error", message, "/x/train.py", line, [RuntimeRelated("/x/train.py", 9, "here")],
                          [rank], step, outcome).to_json()


def _result(records: dict, exit_code: int = 0, timed_out: bool = False, tail=None) -> LaunchResult:
    return LaunchResult(exit_code, timed_out, 1.0, tail or ["last line"], records, ["python"], [])


def _fp(*hashes) -> dict:
    return {"sum": 1.0, "hash": "".join(h or "0" for h in hashes), "hashes": list(hashes)}


def test_merge_unions_ranks_keeps_the_earliest_step_and_other_messages_as_evidence() -> None:
    findings = [RuntimeFinding.from_json(_finding(1, 3, "late")), RuntimeFinding.from_json(_finding(0, None, "early")),
                RuntimeFinding.from_json(_finding(1, 1, "early"))]
    [merged] = merge_findings(findings)
    assert merged.ranks == [0, 1] and merged.step == 1
    assert merged.message == "early" and merged.evidence == ["late"]
    assert [(r.path, r.line) for r in merged.related] == [("/x/train.py", 9)]


def test_report_counts_steps_per_optimizer_and_lists_unfinished_ranks() -> None:
    records = {
        0: [{"kind": "start"}, {"kind": "finding", **_finding(0, 1)},
            {"kind": "end", "steps": {"1": 1, "2": 4}, "total_steps": 5, "error": None}],
        1: [{"kind": "start"}, {"kind": "finding", **_finding(1, 1)}],
    }
    report = build_report("/x/train.py", 2, _result(records), 60)
    assert report.steps == 4 and report.unfinished == [1]
    assert [f.ranks for f in report.findings] == [[0, 1]]
    text = render_text(report)
    assert "/x/train.py:7: DDP001 [error] m" in text and "    /x/train.py:9: here" in text
    assert "seen on ranks 0, 1, first at step 1" in text
    assert text.rstrip().endswith("1 error, 0 warnings in 2 processes; script exited 0 after 4 optimizer steps")
    assert exit_status(report) == 1


def test_script_failure_is_reported_with_its_exit_code_error_and_last_lines() -> None:
    end = {"kind": "end", "steps": {"1": 1}, "error": "ValueError: boom", "in_step": {"optimizer": "Adam", "step": 2}}
    records = {0: [{"kind": "start"}, end]}
    report = build_report("/x/train.py", 1, _result(records, exit_code=1, tail=["Traceback", "ValueError: boom"]), 60)
    text = render_text(report)
    assert "script failed with exit code 1 (rank 0: ValueError: boom during Adam step 2)" in text
    assert "    | ValueError: boom" in text
    assert exit_status(report) == 1  # no finding, but the failure is not hidden behind a 0
    document = json.loads(render_json(report))
    assert document["findings"] == [] and document["script_exit_code"] == 1
    assert document["errors"] == {"0": "ValueError: boom"}


def test_json_report_has_the_documented_keys() -> None:
    records = {0: [{"kind": "finding", **_finding(0, 2)}, {"kind": "end", "steps": {"1": 3}}]}
    document = json.loads(render_json(build_report("/x/train.py", 1, _result(records), 60)))
    assert set(document) >= {"findings", "script_exit_code"}
    assert set(document["findings"][0]) >= {"code", "severity", "message", "path", "line", "related", "ranks", "step"}
    assert document["findings"][0]["related"] == [{"path": "/x/train.py", "line": 9, "note": "here"}]


def test_timeout_is_a_failure_even_without_findings() -> None:
    report = build_report("/x/hang.py", 2, _result({0: [{"kind": "start"}]}, exit_code=124, timed_out=True), 5)
    assert "script timed out after 5s" in render_text(report) and exit_status(report) == 1


def _side(findings=(), exit_code=0, initial=None, final=None, static=(), in_step=None, error=None) -> Side:
    rows = [{"kind": "finding", **f} for f in findings]
    if initial is not None:
        rows.append({"kind": "initial", "fingerprint": initial})
    if final is not None:
        rows.append({"kind": "step", "optimizer": 1, "step": 1, "loss": 0.5, "fingerprint": final})
    rows.append({"kind": "end", "steps": {"1": 4}, "error": error, "in_step": in_step})
    report = build_report("/x/t.py", 1, _result({0: rows}, exit_code=exit_code), 60)
    return Side("side", [StaticFinding(c, 7, "error", "") for c in static], report)


def test_model_status_reads_the_first_and_last_fingerprints() -> None:
    assert model_status(_side(initial=_fp("a", "b"), final=_fp("a", "b")).report) == "model never changed"
    assert model_status(_side(initial=_fp("a", "b"), final=_fp("c", "d")).report) == "trains"
    partial = _side(initial=_fp("a", "b", None), final=_fp("a", "d", None)).report
    assert model_status(partial) == "part of the model never trained (1 of 2 parameters changed)"


def test_verdicts() -> None:
    stale = _side([_finding(0, 1)], initial=_fp("a"), final=_fp("a"), static=["DDP001"])
    trains = _side(initial=_fp("a"), final=_fp("b"))
    assert verdict_for(stale, trains, 1, 4) == (
        "original: optimizer stepped stale parameters, model never changed; fixed: trains, 0 findings", False)
    assert verdict_for(trains, _side(initial=_fp("a"), final=_fp("b")), 1, 20) == (
        "equivalent: bit-identical parameters after 20 steps", True)
    assert verdict_for(stale, None, 0, 4)[0] == (
        "not verified: no fix applied (no automatic fix for these findings), so nothing was compared; original: "
        "optimizer stepped stale parameters, model never changed")
    crashed = _side([_finding(0, None, code="DDP002", outcome="optimizer state does not match its parameters")],
                    exit_code=1, initial=_fp("a"), in_step={"optimizer": "Adam", "step": 1},
                    error="RuntimeError: expected dtype float")
    assert describe(crashed.report) == (
        "optimizer state does not match its parameters, crashed at step 1 (RuntimeError: expected dtype float)")


def test_a_refused_fix_is_not_verified_says_why_and_exits_4() -> None:
    # It used to exit 0 when the original happened to run clean: verify had compared nothing.
    from ddp_lint.runtime.verify import NOT_VERIFIED_EXIT_CODE, VerifyResult

    clean = _side(initial=_fp("a"), final=_fp("b"))
    clean.static = [StaticFinding("DDP002", 7, "error", "", "the placement is in another method (`setup()`, line 9)")]
    verdict, _ = verdict_for(clean, None, 0, 4)
    assert verdict.startswith("not verified: no fix applied (no automatic fix for these findings: line 7: the "
                              "placement is in another method (`setup()`, line 9)), so nothing was compared")
    result = VerifyResult("t.py", 0, [], clean, None, verdict, False, 4)
    assert result.exit_code == NOT_VERIFIED_EXIT_CODE == 4
    nothing = _side(initial=_fp("a"), final=_fp("b"))
    assert VerifyResult("t.py", 0, [], nothing, None, "", False, 4).exit_code == 0  # nothing to fix: as before


def test_the_loss_table_counts_steps_from_0_as_scripts_log_them() -> None:
    from ddp_lint.runtime.verify import VerifyResult, render_text as render_verify

    side = _side(initial=_fp("a"), final=_fp("b"))
    text = render_verify(VerifyResult("t.py", 1, [], side, side, "equivalent", True, 1))
    assert "loss step 0 " in text and "loss step 1 " not in text


def test_torchrun_command_uses_a_free_port_and_the_bootstrap_module() -> None:
    command = build_command(LaunchSpec("/x/t.py", ["--lr", "1"], nproc=2))
    assert command[1:4] == ["-m", "torch.distributed.run", "--standalone"]
    assert command[-5:] == ["-m", "ddp_lint.runtime.bootstrap", "/x/t.py", "--lr", "1"]
    assert build_command(LaunchSpec("/x/t.py", nproc=1))[1:] == ["-m", "ddp_lint.runtime.bootstrap", "/x/t.py"]


def test_torchrun_noise_is_cut_from_the_script_output() -> None:
    lines = [
        "rank 0 step 1",
        "Traceback (most recent call last):",
        '  File "/x/train.py", line 3, in <module>',
        "ValueError: boom",
        "W1202 13:55:58.476000 18492 /v/torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 1",
        "E1202 13:55:58.541000 18492 /v/torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1)",
        "Traceback (most recent call last):",
        '  File "/v/bin/torchrun", line 8, in <module>',
        '  File "/v/torch/distributed/run.py", line 936, in main',
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "=====",
    ]
    assert script_lines(lines) == lines[:4]


def test_bad_usage_is_one_line_and_exit_code_2(capsys, tmp_path) -> None:
    script = tmp_path / "t.py"
    script.write_text("pass\n")
    cases = [
        ["--nproc-per-node", "0", str(script)],
        ["--backend", "mpi", str(script)],
        [str(tmp_path / "missing.py")],
        ["--launcher", "direct", "--nproc-per-node", "2", str(script)],
        [],
    ]
    for argv in cases:
        assert cli.run_main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("ddp-lint run: error:"), (argv, err)
    assert cli.verify_main(["--timeout", "-1", str(script)]) == 2
    assert capsys.readouterr().err.startswith("ddp-lint verify: error:")


def test_a_value_that_is_not_a_number_is_named_without_argparse_internals(capsys, tmp_path) -> None:
    script = tmp_path / "t.py"
    script.write_text("pass\n")
    for argv, words in ((["--nproc-per-node", "x", str(script)], "expected a whole number, got 'x'"),
                        (["--timeout", "soon", str(script)], "expected a number of seconds, got 'soon'")):
        assert cli.run_main(argv) == 2, argv
        err = capsys.readouterr().err
        assert words in err and "_positive" not in err, err


def test_a_rank_stopped_before_its_monitor_started_is_still_named_by_node_and_local_rank(tmp_path) -> None:
    # Under load a rank can be stopped while importing torch, before its start record: the report
    # named it "node 0/local ?" (a flaky multi-node test). Its file's first line says who it is.
    from ddp_lint.runtime.job import NodeStatus
    from ddp_lint.runtime.records import RankRecorder, read_records

    for rank, local in ((2, 0), (3, 1)):
        RankRecorder(str(tmp_path), rank, local).close()  # opened, then killed before the monitor ran
    records = read_records(str(tmp_path))
    report = build_report("/x/t.py", 4, _result(records, exit_code=1), 60,
                          nodes=[NodeStatus(1, "host-b", sorted(records), 1)])
    assert [report.rank_label(rank) for rank in (2, 3)] == ["rank 2 (node 1/local 0)", "rank 3 (node 1/local 1)"]
    assert report.unfinished == [2, 3]


def test_help_exits_zero(capsys) -> None:
    assert cli.run_main(["--help"]) == 0
    assert "--nproc-per-node" in capsys.readouterr().out


def test_missing_torch_is_one_clear_line() -> None:
    code = ("import sys; sys.modules['torch'] = None; "
            "from ddp_lint.runtime.cli import run_main, verify_main; "
            "sys.exit(run_main([sys.argv[1]]) * 10 + verify_main([sys.argv[1]]))")
    done = subprocess.run([sys.executable, "-c", code, __file__], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": REPO})
    assert done.returncode == 22, done.stderr
    hint = ("needs torch, which is not installed: pip install torch "
            "(CPU only: pip install torch --index-url https://download.pytorch.org/whl/cpu)")
    assert done.stderr.splitlines() == [f"ddp-lint run {hint}", f"ddp-lint verify {hint}"]


def test_module_entry_point_rejects_unknown_subcommands() -> None:
    done = subprocess.run([sys.executable, "-m", "ddp_lint.runtime", "lint", "x.py"], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": REPO})
    assert done.returncode == 2 and done.stderr.startswith("usage: python -m ddp_lint.runtime")


def test_free_port_can_ask_for_the_next_ports_free_too() -> None:
    # a multi-node run collects reports on the rendezvous port + 1: a test that picks the port must
    # find both free, or the collector's bind fails ("Address already in use")
    import socket

    from ddp_lint.runtime.launcher import free_port

    port = free_port(3)
    for offset in range(3):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port + offset))
