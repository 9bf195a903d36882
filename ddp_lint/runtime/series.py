"""The numbers the HTML report draws, read from the ranks' trace records (the `step` rows).

Per rank: the loss and the update norm (the L2 norm of what the step changed in the model's
parameters) of each step of the training loop's optimizer. Per step: the largest spread across
ranks of a replicated parameter's sum, the quantity the monitor's cross-rank check (I6) compares.
Steps are counted from 0, as training scripts log them and as `verify`'s loss table shows them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from .report import RankTrace, RunReport


@dataclass(frozen=True)
class Points:
    steps: List[int]
    values: List[Optional[float]]  # None: not recorded at that step

    def __bool__(self) -> bool:
        return any(v is not None for v in self.values)


def _step(row: Dict[str, object]) -> int:
    return int(row.get("step", 0)) - 1  # type: ignore[call-overload]  # the monitor counts from 1


def _number(value: object) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def loss(trace: RankTrace) -> Points:
    rows = trace.main_steps()
    return Points([_step(r) for r in rows], [_number(r.get("loss")) for r in rows])


def update_norm(trace: RankTrace) -> Points:
    rows = trace.main_steps()
    return Points([_step(r) for r in rows], [_number(r.get("update_norm")) for r in rows])


def _replicated_sums(row: Dict[str, object]) -> Optional[Dict[int, float]]:
    positions = row.get("replicated") or []
    fingerprint = row.get("fingerprint") or {}
    sums = fingerprint.get("sums") if isinstance(fingerprint, dict) else None
    if not positions or not isinstance(sums, list):
        return None
    out = {}
    for i in positions:  # type: ignore[union-attr]
        if isinstance(i, int) and 0 <= i < len(sums) and _number(sums[i]) is not None:
            out[i] = float(sums[i])
    return out or None


def rank_spread(report: RunReport) -> Points:
    """Per step, max over replicated parameters of (largest - smallest sum across ranks); empty with one rank."""
    by_step: Dict[int, List[Dict[int, float]]] = {}
    for rank in sorted(report.traces):
        for row in report.traces[rank].main_steps():
            sums = _replicated_sums(row)
            if sums is not None:
                by_step.setdefault(_step(row), []).append(sums)
    steps: List[int] = []
    values: List[Optional[float]] = []
    for step in sorted(by_step):
        ranks = by_step[step]
        if len(ranks) < 2:
            continue
        common = set.intersection(*(set(r) for r in ranks))
        spreads = [max(r[i] for r in ranks) - min(r[i] for r in ranks) for i in sorted(common)]
        steps.append(step)
        values.append(max(spreads) if spreads else None)
    return Points(steps, values)


def ranks_of(reports: Sequence[Optional[RunReport]]) -> List[int]:
    """Every rank that left a trace in any of the reports, in order."""
    return sorted({rank for report in reports if report is not None for rank in report.traces})
