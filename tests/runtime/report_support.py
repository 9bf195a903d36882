"""Shared by the HTML report tests: ranks' trace records made by hand, and a reader of the charts a page holds.

The reader parses the page (or a browser's dump of its DOM) with the standard library's HTML parser
and gives back what each chart drew: its rank, its kind and each series' steps and values.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Dict, List, Optional, Sequence, Tuple

from ddp_lint.runtime.launcher import LaunchResult
from ddp_lint.runtime.report import RunReport, build_report
from ddp_lint.runtime.verify import Side, StaticFinding, VerifyResult


@dataclass
class Chart:
    rank: Optional[int]  # None: a chart of the whole job (the ranks' divergence)
    kind: str  # "loss" | "update" | "divergence"
    title: str = ""
    series: Dict[str, Tuple[List[int], List[Optional[float]]]] = field(default_factory=dict)
    polylines: int = 0


def _values(text: str) -> List[Optional[float]]:
    return [None if v == "none" else float(v) for v in text.split()]


class _ChartReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.charts: List[Chart] = []
        self._ranks: List[Tuple[str, Optional[int]]] = []  # (tag, rank) of the open elements that carry one
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        a = dict(attrs)
        if tag == "div" and a.get("data-rank") is not None:
            self._ranks.append(("div", int(a["data-rank"] or 0)))
        elif tag == "div":
            self._ranks.append(("div", None))
        if tag == "svg" and "chart" in (a.get("class") or "").split():
            rank = next((r for _, r in reversed(self._ranks) if r is not None), None)
            self.charts.append(Chart(rank, a.get("data-kind") or ""))
        elif tag == "title" and self.charts and not self.charts[-1].title:
            self._in_title = True
        elif tag == "g" and a.get("data-series") is not None and self.charts:
            self.charts[-1].series[a["data-series"] or ""] = (
                [int(s) for s in (a.get("data-steps") or "").split()], _values(a.get("data-values") or ""))
        elif tag == "polyline" and self.charts:
            self.charts[-1].polylines += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self._ranks:
            self._ranks.pop()
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.charts[-1].title += data


def charts_in(page: str) -> List[Chart]:
    reader = _ChartReader()
    reader.feed(page)
    return reader.charts


def chart(charts: Sequence[Chart], kind: str, rank: Optional[int] = None) -> Chart:
    found = [c for c in charts if c.kind == kind and c.rank == rank]
    assert len(found) == 1, (kind, rank, [(c.kind, c.rank) for c in charts])
    return found[0]


# ------------------------------------------------------------------------------ records by hand
def _fingerprint(sums: Sequence[float]) -> Dict[str, object]:
    hashes = [f"{hash(round(s, 9)) & 0xFFFFFFFF:016x}" for s in sums]
    return {"sum": sum(sums), "hash": "".join(hashes)[:16], "hashes": hashes, "sums": list(sums)}


def rank_records(rank: int, losses: Sequence[Optional[float]], norms: Sequence[Optional[float]],
                 sums: Sequence[Sequence[float]], replicated: Sequence[int] = (), initial: Sequence[float] = (),
                 local_rank: Optional[int] = None) -> List[Dict[str, object]]:
    """What a traced rank writes: start, the initial fingerprint, one step row per loss (steps from 1), end."""
    rows: List[Dict[str, object]] = [{"kind": "start", "rank": rank, "local_rank": rank if local_rank is None
                                      else local_rank}]
    rows.append({"kind": "initial", "rank": rank, "optimizer": 1, "fingerprint": _fingerprint(initial or sums[0])})
    for step, (loss, norm, step_sums) in enumerate(zip(losses, norms, sums), start=1):
        rows.append({"kind": "step", "rank": rank, "optimizer": 1, "step": step, "loss": loss, "update_norm": norm,
                     "fingerprint": _fingerprint(step_sums), "replicated": list(replicated)})
    rows.append({"kind": "end", "rank": rank, "exit_code": 0, "steps": {"1": len(losses)}})
    return rows


def run_report(script: str, records: Dict[int, List[Dict[str, object]]], exit_code: int = 0,
               output: Sequence[str] = (), nodes: Optional[list] = None) -> RunReport:
    result = LaunchResult(exit_code=exit_code, timed_out=False, duration=1.0, output_tail=list(output),
                          records=records, command=["torchrun"])
    return build_report(script, max(len(records), 1), result, 60.0, nodes=nodes)


FROZEN = [0.25, 0.25, 0.25]  # the original's parameter sums: it never moves


def frozen_and_training(script: str) -> VerifyResult:
    """A verify of two ranks by hand: the original's model never moves, the fixed one trains."""
    original = {r: rank_records(r, [1.0 + r, 0.9 + r, 0.95 + r], [0.0, 0.0, 0.0], [FROZEN[:2]] * 3)
                for r in (0, 1)}
    fixed = {r: rank_records(r, [1.0 + r, 0.6 + r, 0.3 + r], [0.5, 0.25, 0.125],
                             [[0.3, 0.2], [0.35, 0.15], [0.4, 0.1]], initial=FROZEN[:2]) for r in (0, 1)}
    static = [StaticFinding("DDP001", 2, "error", "optimizer built before <fully_shard> & co.")]
    return VerifyResult(
        script=script, applied=1,
        diff=["--- a", "+++ b", "@@ -1,2 +1,2 @@", "-opt = make(model)", "+fully_shard(model)"],
        original=Side("original", static, run_report(script, original)),
        fixed=Side("fixed", [], run_report(script, fixed)),
        verdict="original: optimizer stepped stale parameters, model never changed; fixed: trains, 0 findings",
        equivalent=False, steps=3,
        source="model = Net()\nopt = make(model)  # <b>&amp;</b>\nfully_shard(model)\n",
        fixed_source="model = Net()\nfully_shard(model)\nopt = make(model)  # <b>&amp;</b>\n")
