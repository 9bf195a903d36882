"""`ddp-lint run` across nodes: two "nodes" on this machine (two `ddp-lint run` processes joining one
c10d rendezvous on 127.0.0.1) give the report one node gives for the same ranks; a node killed mid-run
is named in node 0's report and leaves no process behind; SLURM's environment makes the same launch.

Each node starts 2 ranks (gloo on CPU; NCCL with one GPU per rank under the `gpu` marker).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional

import pytest

from ddp_lint.runtime.cli import _run_parser, node_launch
from ddp_lint.runtime.collect import NEVER_REPORTED, Collector, NodeResult, Sender
from ddp_lint.runtime.job import NodeStatus, merge
from ddp_lint.runtime.launcher import LaunchResult, free_port, is_alive, process_tree
from ddp_lint.runtime.nodes import NodeOptionError, expand_nodelist, from_slurm
from ddp_lint.runtime.report import INCOMPLETE_EXIT_CODE, build_report, exit_status, render_text
from runtime_harness import LAUNCH_TIMEOUT, REPO, SCENARIOS_DIR, codes, command, run_all, running

pytestmark = pytest.mark.slow

SUPPORT = os.path.join(REPO, "tests", "runtime", "support")


def _two_nodes(script: str, port: int, *options: str, script_args=()) -> List[List[str]]:
    return [command("run", script, "--nnodes", "2", "--node-rank", str(node), "--rdzv-backend", "c10d",
                    "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", f"test-{port}", *options,
                    script_args=script_args)
            for node in (0, 1)]


def _comparable(report: Dict[str, object]) -> Dict[str, object]:
    """What must not depend on how the ranks were spread over nodes."""
    return {
        "findings": [{k: f[k] for k in ("code", "severity", "path", "line", "ranks", "step", "outcome", "message")}
                     for f in report["findings"]],  # type: ignore[union-attr]
        "script_exit_code": report["script_exit_code"],
        "steps": report["steps"],
        "errors": report["errors"],
        "unfinished_ranks": report["unfinished_ranks"],
    }


@pytest.mark.parametrize("name, code", [("ddp_convert_after_wrap", "DDP003"), ("zero_bucket_view_cast", "DDP005"),
                                        ("ddp_convert_after_wrap_fixed", None)])
def test_two_nodes_report_what_one_node_reports_for_the_same_ranks(name: str, code: Optional[str]) -> None:
    script = os.path.join(SCENARIOS_DIR, f"{name}.py")
    options = ("--nproc-per-node", "2", "--timeout", str(LAUNCH_TIMEOUT))
    started = time.monotonic()
    node0, node1, single = run_all([
        *_two_nodes(script, free_port(3), *options),
        command("run", script, "--nproc-per-node", "4", "--timeout", str(LAUNCH_TIMEOUT)),
    ])
    print(f"{name}: two nodes and one node side by side in {time.monotonic() - started:.1f}s")
    merged, alone = node0.json(), single.json()
    assert _comparable(merged) == _comparable(alone), (merged, alone)
    assert node0.returncode == single.returncode == (1 if code else 0), node0.stderr[-2000:]

    # Node 0 names both nodes and every rank; node 1 printed one line pointing at node 0.
    assert [(n["node"], len(n["ranks"]), n["missing"]) for n in merged["nodes"]] == [(0, 2, None), (1, 2, None)]
    assert sorted(r for n in merged["nodes"] for r in n["ranks"]) == [0, 1, 2, 3]
    assert sorted(merged["ranks"].values()) == [f"node {n}/local {r}" for n in (0, 1) for r in (0, 1)]
    line = json.loads(node1.stdout)
    assert line["node"] == 1 and line["report_on"].startswith("node 0 (") and len(line["ranks"]) == 2
    assert line["exit_code"] == node0.returncode == node1.returncode

    if code is None:
        assert codes(merged) == [] and merged["steps"] == 4
        return
    # The ranks trained apart across the node boundary: the cross-rank check (a collective over all
    # four ranks) fired on every rank of both nodes.
    finding = next(f for f in merged["findings"] if f["code"] == code)
    assert finding["ranks"] == [0, 1, 2, 3]
    divergence = [finding["message"], *finding["evidence"]]
    assert any("replicated parameters disagree across ranks" in text for text in divergence), finding


def test_verify_across_two_nodes_gives_the_one_node_verdict() -> None:
    # One rank per node; the fixed copies of both "nodes" sit beside the original in the same folder
    # here (as on a shared filesystem) and are removed afterwards.
    script = os.path.join(SCENARIOS_DIR, "zero_bucket_view_cast.py")
    before = sorted(os.listdir(SCENARIOS_DIR))
    options = ("--nproc-per-node", "1", "--timeout", str(LAUNCH_TIMEOUT))
    node0, node1, single = run_all([
        *[argv[:3] + ["verify"] + argv[4:] for argv in _two_nodes(script, free_port(3), *options)],
        command("verify", script, "--nproc-per-node", "2", "--timeout", str(LAUNCH_TIMEOUT)),
    ])
    merged, alone = node0.json(), single.json()
    assert merged["verdict"] == alone["verdict"], (merged["verdict"], alone["verdict"])
    assert merged["verdict"].startswith("original: ranks trained apart: ZeRO's buckets no longer alias")
    assert merged["verdict"].endswith("; fixed: trains, 0 findings")
    assert [f["ranks"] for f in merged["original"]["run"]["findings"]] == [[0, 1]]
    assert [len(n["ranks"]) for n in merged["fixed"]["run"]["nodes"]] == [1, 1]
    assert node0.returncode == single.returncode == 0 == json.loads(node1.stdout)["exit_code"] == node1.returncode
    assert sorted(os.listdir(SCENARIOS_DIR)) == before


def _tree_pids(pid: int) -> List[int]:
    return [pid, *process_tree(pid)]


def _start(argv: List[str], env: Optional[Dict[str, str]] = None) -> "subprocess.Popen[str]":
    environ = dict(os.environ if env is None else env)
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, environ.get("PYTHONPATH", "")) if p)
    environ.setdefault("PYTHONWARNINGS", "ignore")
    return subprocess.Popen(argv, cwd=REPO, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _ranks_started(pid: int, count: int) -> bool:
    ranks = 0
    for child in process_tree(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        # A rank, not torchrun (whose command line names the bootstrap too).
        ranks += b"ddp_lint.runtime.bootstrap" in cmdline and b"torch.distributed.run" not in cmdline
    return ranks >= count


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="process trees are read from /proc")
@pytest.mark.parametrize("killed", [1, 0], ids=["node 1 killed", "node 0 killed"])
def test_a_node_killed_mid_run_is_named_and_leaves_no_process(killed: int, tmp_path) -> None:
    script = os.path.join(SUPPORT, "barrier_loop.py")  # ranks meet in a barrier twice a second for 10 minutes
    argvs = _two_nodes(script, free_port(3), "--nproc-per-node", "2", "--timeout", "300")
    # Every rank says when it is in the barrier loop: on a loaded machine a fixed sleep after the
    # processes appear was not enough (torch was still being imported when the node was killed).
    ready = tmp_path / "ready"
    ready.mkdir()
    procs = [_start(argv, env={**os.environ, "BARRIER_LOOP_READY": str(ready)}) for argv in argvs]
    victim, survivor = procs[killed], procs[1 - killed]
    started = time.monotonic()
    try:
        while not (all(_ranks_started(proc.pid, 2) for proc in procs) and len(os.listdir(ready)) == 4):
            assert time.monotonic() - started < LAUNCH_TIMEOUT, "the ranks never started"
            assert all(proc.poll() is None for proc in procs), [proc.communicate() for proc in procs]
            time.sleep(0.2)
        time.sleep(1)  # in the barrier loop
        pids = [pid for proc in procs for pid in _tree_pids(proc.pid)]  # ddp-lint runs, torchruns, ranks
        assert len(pids) >= 8, pids
        # The node dies outright: its `ddp-lint run` gets SIGKILL (its process group holds only it;
        # torchrun and the ranks lead sessions of their own).
        os.killpg(victim.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        stdout, stderr = survivor.communicate(timeout=LAUNCH_TIMEOUT)
        print(f"node {1 - killed} ended {time.monotonic() - killed_at:.1f}s after node {killed} was killed")
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        victim.communicate()

    report = json.loads(stdout)
    assert survivor.returncode == INCOMPLETE_EXIT_CODE == 3, stderr[-2000:]
    assert time.monotonic() - killed_at < 60  # well within the 300 s timeout
    if killed == 1:
        # Node 0 names the dead node and keeps its own ranks' records.
        [lost] = [n for n in report["nodes"] if n["missing"]]
        assert lost["node"] == 1 and lost["missing"].startswith("died before reporting"), report["nodes"]
        assert sorted(report["ranks"].values()) == ["node 0/local 0", "node 0/local 1"]
    else:
        # Node 1 cannot reach node 0: it prints its own ranks' report and says so.
        assert "node 0 (127.0.0.1:" in stderr and "could not be reached" in stderr, stderr[-2000:]
        assert len(report["unfinished_ranks"]) == 2 or report["script_exit_code"] != 0, report
    deadline = time.monotonic() + 30
    while any(is_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [p for p in pids if is_alive(p)] == []
    assert running("barrier_loop.py") == []


def test_a_node_that_never_joins_is_named_soon_after_the_timeout() -> None:
    # Node 0 alone of two: its rendezvous waits for node 1 until the 10 s timeout stops it.
    script = os.path.join(SCENARIOS_DIR, "ddp_convert_after_wrap.py")
    started = time.monotonic()
    [node0] = run_all([_two_nodes(script, free_port(3), "--nproc-per-node", "2", "--timeout", "10")[0]])
    took = time.monotonic() - started
    print(f"node 0 alone reported after {took:.1f}s")
    report = node0.json()
    assert node0.returncode == INCOMPLETE_EXIT_CODE, node0.stderr[-2000:]
    assert report["timed_out"] is True and report["findings"] == []
    assert [(n["node"], n["missing"]) for n in report["nodes"]] == [(0, None), (1, NEVER_REPORTED)]
    assert took < 10 + 30  # the timeout, then 5 s for a node never heard of (and torch's start-up)


def test_collector_names_a_node_that_never_joined_and_answers_the_others() -> None:
    # The transport alone, without torch: node 1 reports, node 2 never connects (a node 2 of another
    # job on the same port is not it).
    collector = Collector(free_port(), job="job-a")
    rows = [{"kind": "start", "local_rank": 0, "world_size": 3}, {"kind": "end", "steps": {"1": 4}}]
    sent = LaunchResult(exit_code=0, timed_out=False, duration=1.0, output_tail=[], records={1: rows}, command=[])
    sender = Sender("127.0.0.1", collector.port, 1, "host-b", deadline=time.monotonic() + 30, job="job-a")
    stray = Sender("127.0.0.1", collector.port, 2, "host-c", deadline=time.monotonic() + 30, job="job-b")
    sender.announce()
    stray.announce()
    with ThreadPoolExecutor(max_workers=2) as pool:
        reply = pool.submit(sender.deliver, sent)
        assert pool.submit(stray.deliver, sent).result(timeout=30) is None
        results, missing = collector.wait([1, 2], deadline=time.monotonic() + 3)
        assert sorted(results) == [1] and results[1].records == {1: rows} and results[1].host == "host-b"
        assert missing == {2: NEVER_REPORTED}
        collector.finish(INCOMPLETE_EXIT_CODE, "host-a")
        assert reply.result(timeout=30) == {"type": "done", "exit_code": 3, "host": "host-a"}

    mine = LaunchResult(exit_code=0, timed_out=False, duration=1.0, output_tail=[],
                        records={0: [{"kind": "start", "local_rank": 0}, {"kind": "end", "steps": {"1": 4}}]},
                        command=[])
    nodes = [NodeStatus(0, "host-a", [0], 0), NodeStatus(1, "host-b", [1], 0),
             NodeStatus(2, "?", missing=NEVER_REPORTED)]
    merged = merge([NodeResult.local(0, "host-a", mine), results[1]], [])
    report = build_report("train.py", 3, merged, 60, nodes=nodes)
    assert exit_status(report) == INCOMPLETE_EXIT_CODE
    text = render_text(report)
    assert "node 2 never reported: its ranks' records are not in this report" in text
    assert "in 3 processes on 3 nodes; script exited 0 after 4 optimizer steps" in text
    assert report.rank_label(1) == "rank 1 (node 1/local 0)"


# ------------------------------------------------------------------------------------------ SLURM
def _options(*argv: str) -> argparse.Namespace:
    return _run_parser().parse_args([*argv, "train.py"])


def test_slurm_nodelists_expand_in_order_with_their_padding() -> None:
    assert expand_nodelist("node[01-03,07]") == ["node01", "node02", "node03", "node07"]
    assert expand_nodelist("gpu7,cpu[9-11]") == ["gpu7", "cpu9", "cpu10", "cpu11"]
    assert expand_nodelist("r[1-2]-n[08-09]") == ["r1-n08", "r1-n09", "r2-n08", "r2-n09"]
    assert expand_nodelist("a-b.example.org") == ["a-b.example.org"]
    with pytest.raises(NodeOptionError):
        expand_nodelist("node[01-03")


SLURM_JOB = {"SLURM_JOB_ID": "4242", "SLURM_PROCID": "2", "SLURM_NODEID": "2", "SLURM_NNODES": "4",
             "SLURM_NTASKS": "4", "SLURM_NODELIST": "node[01-03,07]", "SLURM_STEP_NUM_NODES": "4"}


def test_slurm_environment_makes_the_torchrun_launch() -> None:
    launch = from_slurm(SLURM_JOB)
    assert (launch.nnodes, launch.node_rank, launch.rdzv_backend, launch.rdzv_id) == ("4", 2, "c10d", "4242")
    assert launch.rdzv_endpoint == "node01:28484" and launch.collector_port == 28485  # 20000 + 2 * 4242
    assert launch.torchrun_args() == ["--nnodes", "4", "--node-rank", "2", "--rdzv-backend", "c10d",
                                      "--rdzv-endpoint", "node01:28484", "--rdzv-id", "4242", "--max-restarts", "0"]
    # Automatic under srun across nodes; --no-slurm or any explicit node option turns it off.
    assert node_launch(_options(), SLURM_JOB) == launch
    assert node_launch(_options("--no-slurm"), SLURM_JOB) is None
    explicit = node_launch(_options("--nnodes", "2", "--node-rank", "1", "--rdzv-endpoint", "h:5"), SLURM_JOB)
    assert explicit is not None
    assert (explicit.node_rank, explicit.rdzv_endpoint, explicit.source) == (1, "h:5", "options")
    assert node_launch(_options(), {**SLURM_JOB, "SLURM_NNODES": "1", "SLURM_STEP_NUM_NODES": "1"}) is None
    # A batch script on the allocation, not an srun step: one node, no waiting for the others.
    batch = {k: v for k, v in SLURM_JOB.items() if k != "SLURM_STEP_NUM_NODES"}
    assert node_launch(_options(), batch) is None and node_launch(_options("--slurm"), batch) == launch
    assert node_launch(_options("--slurm", "--rdzv-endpoint", "h:7", "--report-port", "9"), SLURM_JOB) == \
        from_slurm(SLURM_JOB, "h:7", report_port=9)
    # One task per node is what torchrun-based launchers need.
    with pytest.raises(NodeOptionError, match="one task per node"):
        from_slurm({**SLURM_JOB, "SLURM_NTASKS": "8"})
    with pytest.raises(NodeOptionError):
        node_launch(_options("--slurm", "--nnodes", "2"), SLURM_JOB)


def test_node_options_are_checked() -> None:
    assert node_launch(_options(), {}) is None
    assert node_launch(_options("--nnodes", "1"), {}) is None
    elastic = node_launch(_options("--nnodes", "1:3", "--rdzv-endpoint", "h"), {})
    assert elastic is not None and (elastic.min_nodes, elastic.max_nodes, elastic.rdzv_endpoint) == (1, 3, "h:29400")
    for bad in (["--nnodes", "2"], ["--nnodes", "2", "--node-rank", "2", "--rdzv-endpoint", "h"],
                ["--nnodes", "3:2", "--rdzv-endpoint", "h"], ["--node-rank", "1"]):
        with pytest.raises(NodeOptionError):
            node_launch(_options(*bad), {})


def _free_slurm_job() -> str:
    """A job id whose derived rendezvous and report ports are both free here."""
    for _ in range(200):
        job = random.randrange(1000, 10000)
        port = 20000 + 2 * job
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
            return str(job)
        except OSError:
            continue
    raise AssertionError("no free port pair")


def test_two_nodes_started_as_a_slurm_job_step() -> None:
    # What `srun --nodes 2 --ntasks-per-node 1 ddp-lint run ...` gives each task, by hand, on one machine.
    job = _free_slurm_job()
    script = os.path.join(SCENARIOS_DIR, "ddp_convert_after_wrap.py")
    envs = [{**os.environ, "SLURM_JOB_ID": job, "SLURM_PROCID": str(node), "SLURM_NODEID": str(node),
             "SLURM_NNODES": "2", "SLURM_NTASKS": "2", "SLURM_STEP_NUM_NODES": "2",
             "SLURM_NODELIST": "localhost,localhost"} for node in (0, 1)]
    argv = command("run", script, "--nproc-per-node", "2", "--timeout", str(LAUNCH_TIMEOUT))
    procs = [_start(argv, env) for env in envs]
    outputs = [proc.communicate(timeout=2 * LAUNCH_TIMEOUT) for proc in procs]
    report = json.loads(outputs[0][0])
    assert "DDP003" in codes(report) and procs[0].returncode == 1, outputs[0][1][-2000:]
    assert [(n["node"], len(n["ranks"])) for n in report["nodes"]] == [(0, 2), (1, 2)]
    assert json.loads(outputs[1][0])["exit_code"] == 1 and procs[1].returncode == 1


# ------------------------------------------------------------------------------------------ CUDA
def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count()


@pytest.mark.gpu
@pytest.mark.parametrize("name, code", [("ddp_convert_after_wrap", "DDP003"), ("zero_bucket_view_cast", "DDP005")])
def test_two_nodes_on_cuda_with_nccl(name: str, code: str) -> None:
    # One GPU per node (one rank each): each node sees only its own device, as on two machines.
    if _gpu_count() < 2:
        pytest.skip("needs 2 CUDA devices: one per node")
    script = os.path.join(SCENARIOS_DIR, f"{name}.py")
    options = ("--nproc-per-node", "1", "--backend", "nccl", "--timeout", str(LAUNCH_TIMEOUT))
    port = free_port(3)
    argv = _two_nodes(script, port, *options, script_args=("--device", "cuda"))
    procs = [_start(a, {**os.environ, "CUDA_VISIBLE_DEVICES": str(node)}) for node, a in enumerate(argv)]
    outputs = [proc.communicate(timeout=2 * LAUNCH_TIMEOUT) for proc in procs]
    [single] = run_all([command("run", script, "--nproc-per-node", "2", "--backend", "nccl",
                                "--timeout", str(LAUNCH_TIMEOUT), script_args=("--device", "cuda"))])
    merged = json.loads(outputs[0][0])
    assert code in codes(merged) and procs[0].returncode == 1, outputs[0][1][-2000:]
    assert codes(merged) == codes(single.json())
    finding = next(f for f in merged["findings"] if f["code"] == code)
    assert finding["ranks"] == [0, 1]
    assert [(n["node"], len(n["ranks"])) for n in merged["nodes"]] == [(0, 1), (1, 1)]
    assert json.loads(outputs[1][0])["exit_code"] == 1
