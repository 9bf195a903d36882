"""The HTML report from records made by hand: the charts draw the records' numbers exactly, everything from
the user's code is escaped, a `run` page has no fixed column, and a multi-node page shows every node's ranks."""
from __future__ import annotations

import re

import pytest

from ddp_lint.runtime import series
from ddp_lint.runtime.charts import FIXED, ORIGINAL, Line, line_chart, nice_ticks
from ddp_lint.runtime.cli import run_main, verify_main
from ddp_lint.runtime.job import NodeStatus
from ddp_lint.runtime.page import run_page, verify_page, write_page
from ddp_lint.runtime.series import Points
from report_support import FROZEN, chart, charts_in, frozen_and_training, rank_records, run_report

SCRIPT = "jobs/<train> & co.py"


def test_series_are_the_main_optimizers_step_records_counted_from_0() -> None:
    rows = rank_records(0, [2.0, 1.5, None], [0.5, 0.0, 0.25], [[1.0]] * 3)
    # A helper optimizer that stepped once is not the training loop.
    rows.insert(2, {"kind": "step", "rank": 0, "optimizer": 2, "step": 1, "loss": 99.0, "update_norm": 9.0})
    trace = run_report("t.py", {0: rows}).traces[0]
    assert series.loss(trace) == Points([0, 1, 2], [2.0, 1.5, None])
    assert series.update_norm(trace) == Points([0, 1, 2], [0.5, 0.0, 0.25])


def test_rank_spread_is_the_largest_difference_of_a_replicated_parameters_sum_across_ranks() -> None:
    records = {
        0: rank_records(0, [1, 1], [0, 0], [[1.0, 5.0, 100.0], [1.0, 5.0, 100.0]], replicated=[0, 1]),
        1: rank_records(1, [1, 1], [0, 0], [[1.0, 5.0, -7.0], [1.5, 4.0, 0.0]], replicated=[0, 1]),
    }
    # Position 2 is not replicated (a shard): its difference does not count.
    assert series.rank_spread(run_report("t.py", records)) == Points([0, 1], [0.0, 1.0])
    alone = {0: rank_records(0, [1], [0], [[1.0]], replicated=[0])}
    assert not series.rank_spread(run_report("t.py", alone))


def test_charts_carry_the_exact_numbers_and_break_the_line_where_a_value_is_missing() -> None:
    values = [0.1 + 0.2, 1e-17, None, 2.5, float("nan"), 3.0]
    svg = line_chart("rank 0: loss", "loss", [Line("original", Points(list(range(6)), values), ORIGINAL),
                                              Line("fixed", Points([], []), FIXED)], kind="loss")
    [drawn] = charts_in(svg)
    steps, got = drawn.series["original"]
    assert steps == list(range(6))
    assert got[:4] == values[:4] and got[4] != got[4] and got[5] == 3.0  # repr round-trips; nan is nan
    assert drawn.polylines == 1  # 0.3 -> 1e-17; 2.5 alone; 3.0 alone: only one run of two points or more
    assert drawn.series["fixed"] == ([], [])
    assert "fixed (no data)" in svg
    # Grey print: the lines differ by dash and marker, not only by colour.
    assert f'stroke-dasharray="{FIXED.dash}"' in svg and "<rect" in svg and "<circle" in svg
    assert ">step</text>" in svg and ">loss</text>" in svg  # axis labels


def test_nice_ticks_are_round_and_cover_the_range() -> None:
    assert nice_ticks(0.0, 1.0, 6) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0.13, 0.91, 6) == [0.2, 0.4, 0.6, 0.8]
    assert nice_ticks(0, 3, 6) == [0, 1, 2, 3]
    assert nice_ticks(1e16, 1e16 + 4)  # terminates where adding a step changes nothing


def test_verify_page_overlays_both_runs_per_rank_with_the_records_numbers() -> None:
    result = frozen_and_training(SCRIPT)
    page = verify_page(result, "ddp-lint verify --nproc-per-node 2 'jobs/<train> & co.py'")
    charts = charts_in(page)
    for rank in (0, 1):
        for side, label in ((result.original, "original"), (result.fixed, "fixed")):
            rows = [r for r in side.report.traces[rank].steps]
            expected = ([r["step"] - 1 for r in rows], [r["loss"] for r in rows])
            assert chart(charts, "loss", rank).series[label] == expected
            assert chart(charts, "update", rank).series[label][1] == [r["update_norm"] for r in rows]
    assert chart(charts, "update", 0).series["original"][1] == [0.0, 0.0, 0.0]
    assert "Nothing to compare" in page  # no replicated parameters recorded
    # The verdict, the command, the findings with their source lines, the diff.
    assert result.verdict in page
    assert "ddp-lint verify --nproc-per-node 2 &#x27;jobs/&lt;train&gt; &amp; co.py&#x27;" in page
    assert "optimizer built before &lt;fully_shard&gt; &amp; co." in page
    assert "opt = make(model)  # &lt;b&gt;&amp;amp;&lt;/b&gt;" in page
    assert '<span class="add">+fully_shard(model)</span>' in page
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "@media print" in page and "default-src 'none'" in page  # no script runs, nothing is fetched


def test_user_text_is_escaped_everywhere() -> None:
    hostile = '"><script>alert(1)</script>'
    rows = rank_records(0, [1.0], [0.0], [FROZEN])
    report = run_report(f"{hostile}.py", {0: rows}, exit_code=1, output=[f"Traceback {hostile}"])
    page = run_page(report, None, f"ddp-lint run {hostile}")
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_run_page_has_one_column_and_no_fix() -> None:
    records = {r: rank_records(r, [1.0, 0.5], [0.1, 0.2], [[1.0], [1.1 + r]], replicated=[0]) for r in (0, 1)}
    page = run_page(run_report("train.py", records), [], "ddp-lint run train.py")
    charts = charts_in(page)
    assert {label for c in charts for label in c.series} == {"run"}
    assert chart(charts, "divergence").series["run"] == ([0, 1], [0.0, 1.0])
    assert 'id="fix"' not in page and ">fixed<" not in page


def test_a_multi_node_page_shows_every_nodes_ranks() -> None:
    records = {r: rank_records(r, [1.0], [0.1], [[1.0]], local_rank=r % 2) for r in range(4)}
    nodes = [NodeStatus(0, "host-a", [0, 1], 0), NodeStatus(1, "host-b", [2, 3], 0)]
    page = run_page(run_report("train.py", records, nodes=nodes))
    headings = re.findall(r'<h3 class="node">([^<]*)</h3>', page)
    assert headings == ["node 0 (host-a)", "node 1 (host-b)"]
    assert "rank 3 (node 1/local 1)" in page
    assert sorted(c.rank for c in charts_in(page) if c.kind == "loss") == [0, 1, 2, 3]


def test_write_page_replaces_the_file_whole(tmp_path) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")
    write_page(str(target), "<html>new</html>")
    assert target.read_text() == "<html>new</html>" and sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


@pytest.mark.parametrize("main", [run_main, verify_main])
def test_report_into_a_missing_folder_is_a_usage_error(main, capsys, tmp_path) -> None:
    script = tmp_path / "train.py"
    script.write_text("pass\n")
    assert main(["--report", str(tmp_path / "nowhere" / "r.html"), str(script)]) == 2
    assert "--report: no such folder" in capsys.readouterr().err
