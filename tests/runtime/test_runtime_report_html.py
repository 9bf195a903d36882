"""`--report` on the CPU scenarios: the page's series are the numbers the ranks recorded (or printed).

A silent `fully_shard` (verify: the original's model never moves, the fixed one trains), ranks that
drift apart after a cast after DDP's wrap (run: the divergence chart), the hand-fixed script (run from
the command line: losses as the script printed them, ranks that agree), and two nodes (every node's
ranks on node 0's page).
"""
from __future__ import annotations

import os
import re
from typing import Dict, List

import pytest

from ddp_lint.runtime.config import MonitorConfig
from ddp_lint.runtime.launcher import LaunchSpec, free_port, launch
from ddp_lint.runtime.page import run_page, verify_page
from ddp_lint.runtime.report import build_report
from ddp_lint.runtime.verify import run_verify, static_findings
from report_support import chart, charts_in
from runtime_harness import LAUNCH_TIMEOUT, SCENARIOS_DIR, command, run_all

pytestmark = pytest.mark.slow


def _spec(script: str, nproc: int = 2) -> LaunchSpec:
    return LaunchSpec(script=script, nproc=nproc, timeout=LAUNCH_TIMEOUT, config=MonitorConfig(trace=True, seed=0))


def _steps(rows: List[Dict[str, object]]) -> List[Dict[str, object]]:
    return [row for row in rows if row.get("kind") == "step"]


def test_verify_report_of_a_silent_fully_shard_shows_the_original_frozen_and_the_fixed_training() -> None:
    script = os.path.join(SCENARIOS_DIR, "fully_shard.py")
    result = run_verify(script, [], _spec(script))
    page = verify_page(result, "ddp-lint verify --nproc-per-node 2 fully_shard.py")
    charts = charts_in(page)
    for rank in (0, 1):
        for side, label in ((result.original, "original"), (result.fixed, "fixed")):
            rows = _steps(side.report.traces[rank].steps)
            assert len(rows) == 4
            expected = ([int(r["step"]) - 1 for r in rows], [r["loss"] for r in rows])
            assert chart(charts, "loss", rank).series[label] == expected
            assert chart(charts, "update", rank).series[label] == ([0, 1, 2, 3], [r["update_norm"] for r in rows])
        # The picture: the original's parameters never move, the fixed ones do at every step.
        assert chart(charts, "update", rank).series["original"][1] == [0.0] * 4
        assert all(v > 0 for v in chart(charts, "update", rank).series["fixed"][1])
    assert "Nothing to compare" in page  # fully_shard's parameters are shards, not replicas
    assert result.verdict in page
    assert "DDP001" in page and "optimizer = torch.optim.Adam(model.parameters(), lr=0.05)" in page
    assert '<span class="add">+    fully_shard(model, mesh=mesh)</span>' in page


def test_run_report_of_a_cast_after_wrap_charts_the_ranks_drifting_apart() -> None:
    script = os.path.join(SCENARIOS_DIR, "ddp_convert_after_wrap.py")
    result = launch(_spec(script))
    report = build_report(script, 2, result, LAUNCH_TIMEOUT)
    page = run_page(report, static_findings(script), "ddp-lint run --nproc-per-node 2 ddp_convert_after_wrap.py")
    ranks = {rank: _steps(rows) for rank, rows in result.records.items()}
    assert ranks[0][0]["replicated"] == [0, 1, 2, 3]  # DDP's four parameters
    expected = []
    for first, second in zip(ranks[0], ranks[1]):
        a, b = first["fingerprint"]["sums"], second["fingerprint"]["sums"]  # type: ignore[index]
        expected.append(max(abs(a[i] - b[i]) for i in first["replicated"]))  # type: ignore[union-attr,index]
    drawn = chart(charts_in(page), "divergence").series["run"]
    assert drawn == ([0, 1, 2, 3], expected)
    assert all(v > 0 for v in expected)  # apart from the first step: DDP's hooks were lost before it
    assert "DDP003" in page and "    model.double()" in page


def test_run_report_from_the_command_line_and_across_two_nodes(tmp_path) -> None:
    fixed = os.path.join(SCENARIOS_DIR, "ddp_convert_after_wrap_fixed.py")
    apart = os.path.join(SCENARIOS_DIR, "ddp_convert_after_wrap.py")
    one, nodes = tmp_path / "one.html", tmp_path / "nodes.html"
    port = free_port()
    options = ("--timeout", str(LAUNCH_TIMEOUT), "--report", str(nodes))
    single, node0, node1 = run_all([
        command("run", fixed, "--nproc-per-node", "2", "--timeout", str(LAUNCH_TIMEOUT), "--report", str(one)),
        *[command("run", apart, "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "1",
                  "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", f"report-{port}", *options) for node in (0, 1)],
    ])

    # One machine: the losses the script printed, ranks that agree at every step, the command line.
    assert single.returncode == 0 and f"report written to {one}" in single.stderr, single.stderr[-2000:]
    page = one.read_text()
    charts = charts_in(page)
    printed = re.findall(r"rank (\d) step (\d) loss ([0-9.]+)", single.stderr)
    assert len(printed) == 8
    for rank, step, loss in printed:
        steps, values = chart(charts, "loss", int(rank)).series["run"]
        assert f"{values[steps.index(int(step))]:.6f}" == loss
    assert chart(charts, "divergence").series["run"] == ([0, 1, 2, 3], [0.0] * 4)
    assert f"--report {one}" in page and "runtime findings</h3><p>none</p>" in page

    # Two nodes: node 0 writes the page, with both nodes' ranks; node 1 writes none.
    assert node0.returncode == 1 and node1.returncode == 1, node0.stderr[-2000:]
    page = nodes.read_text()
    assert re.findall(r'<h3 class="node">node (\d)', page) == ["0", "1"]
    # which node gets global rank 0 is the rendezvous's choice (the first to join): one rank per node
    placed = set(re.findall(r"rank (\d) \(node (\d)/local 0\)", page))
    assert placed in ({("0", "0"), ("1", "1")}, {("1", "0"), ("0", "1")}), placed
    assert sorted(c.rank for c in charts_in(page) if c.kind == "loss") == [0, 1]
    assert all(v > 0 for v in chart(charts_in(page), "divergence").series["run"][1])
    assert "report written" not in node1.stderr
