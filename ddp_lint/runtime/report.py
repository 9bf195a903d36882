"""Merge the ranks' records into one run report, and print it as text or JSON."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence

from .findings import ERROR, WARNING, RuntimeFinding, has_error, merge_findings
from .launcher import LaunchResult
from .records import END, FINDING, INITIAL, OPENED, START, STEP

if TYPE_CHECKING:
    from .job import NodeStatus

TAIL_SHOWN = 12
# `ddp-lint run` on node 0 of a multi-node job when some node never reported or died before it
# could: the report holds the other nodes' findings, but not that node's.
INCOMPLETE_EXIT_CODE = 3


@dataclass
class RankTrace:
    """What one rank recorded in trace mode: the model before each optimizer's first step and after each step.

    The training loop is the optimizer that started the most steps, the last built on a tie:
    a helper that steps once before training (a checkpoint maker, say) is left out of losses and
    checksums even when the loop crashes in its first step.
    """

    initial: Dict[int, Dict[str, object]] = field(default_factory=dict)
    steps: List[Dict[str, object]] = field(default_factory=list)
    started: Dict[int, int] = field(default_factory=dict)  # steps begun per optimizer (the rank's end record)

    def main_optimizer(self) -> int:
        counts: Dict[int, int] = dict(self.started)
        if not counts:
            for index in self.initial:
                counts[index] = 1
            for row in self.steps:
                index = int(row.get("optimizer", 1))  # type: ignore[arg-type]
                counts[index] = max(counts.get(index, 0), int(row.get("step", 0)))  # type: ignore[arg-type]
        if not counts:
            return 1
        return max(sorted(counts), key=lambda index: (counts[index], index))

    def main_steps(self) -> List[Dict[str, object]]:
        """The step records of the training loop's optimizer, in order."""
        main = self.main_optimizer()
        return [row for row in self.steps if int(row.get("optimizer", 1)) == main]  # type: ignore[arg-type]

    def final(self) -> Optional[Dict[str, object]]:
        for row in reversed(self.main_steps()):
            if row.get("fingerprint"):
                return row["fingerprint"]  # type: ignore[return-value]
        return None

    def losses(self) -> List[Optional[float]]:
        return [row.get("loss") for row in self.main_steps()]  # type: ignore[misc]

    def params_changed(self) -> Optional[tuple]:
        """(changed, total) parameters between the first and last fingerprint, None if unknown."""
        final = self.final()
        initial = self.initial.get(self.main_optimizer())
        if initial is None or final is None:
            return None
        before, after = initial.get("hashes", []), final.get("hashes", [])
        if len(before) != len(after):  # type: ignore[arg-type]
            return None
        pairs = [(a, b) for a, b in zip(before, after) if a is not None or b is not None]  # type: ignore[arg-type]
        return sum(1 for a, b in pairs if a != b), len(pairs)


@dataclass
class RunReport:
    script: str
    nproc: int
    findings: List[RuntimeFinding]
    exit_code: int
    timed_out: bool
    timeout: float
    duration: float
    output_tail: List[str]
    errors: Dict[int, str]
    in_step: Dict[int, Dict[str, object]]
    steps: int
    unfinished: List[int]
    traces: Dict[int, RankTrace]
    killed: int = 0
    # Multi-node jobs only: every node, reported or missing, and each rank's "node 1/local 1".
    nodes: List["NodeStatus"] = field(default_factory=list)
    rank_names: Dict[int, str] = field(default_factory=dict)

    @property
    def missing_nodes(self) -> List["NodeStatus"]:
        return [n for n in self.nodes if n.missing]

    def rank_label(self, rank: int) -> str:
        name = self.rank_names.get(rank)
        return f"rank {rank} ({name})" if name else f"rank {rank}"

    @property
    def failed(self) -> bool:
        return self.exit_code != 0

    @property
    def n_errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == ERROR)

    @property
    def n_warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity == WARNING)

    def first_error(self) -> Optional[str]:
        for rank in sorted(self.errors):
            return self.errors[rank]
        return None


def display_path(path: str, path_map: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None) -> str:
    if path_map and path in path_map:
        return path_map[path]
    cwd = cwd or os.getcwd()
    if path.startswith(cwd + os.sep):
        return os.path.relpath(path, cwd)
    return path


def _rank_names(records: Mapping[int, List[Dict[str, object]]], nodes: Sequence["NodeStatus"]) -> Dict[int, str]:
    """ "node N/local L": N the ddp-lint node that sent the rank's records, L from the first record that
    says it (the one a rank writes as it opens its file, before torch is imported, or its start record):
    a rank stopped before its monitor started is still named."""
    names: Dict[int, str] = {}
    for node in nodes:
        for rank in node.ranks:
            local = next((row["local_rank"] for row in records.get(rank, ()) if row.get("local_rank") is not None), "?")
            names[rank] = f"node {node.node}/local {local}"
    return names


def build_report(script: str, nproc: int, result: LaunchResult, timeout: float,
                 path_map: Optional[Mapping[str, str]] = None,
                 nodes: Optional[Sequence["NodeStatus"]] = None) -> RunReport:
    findings: List[RuntimeFinding] = []
    errors: Dict[int, str] = {}
    in_step: Dict[int, Dict[str, object]] = {}
    traces: Dict[int, RankTrace] = {}
    started: List[int] = []
    ended: List[int] = []
    steps = 0
    for rank, rows in sorted(result.records.items()):
        trace = traces.setdefault(rank, RankTrace())
        for row in rows:
            kind = row.get("kind")
            if kind in (OPENED, START) and rank not in started:
                started.append(rank)  # a rank stopped while importing torch is unfinished too
            elif kind == FINDING:
                finding = RuntimeFinding.from_json(row)
                finding.path = display_path(finding.path, path_map)
                for rel in finding.related:
                    rel.path = display_path(rel.path, path_map)
                findings.append(finding)
            elif kind == INITIAL:
                trace.initial[int(row.get("optimizer", 1))] = row.get("fingerprint")  # type: ignore
            elif kind == STEP:
                trace.steps.append(row)
            elif kind == END:
                ended.append(rank)
                # The longest-running optimizer's count: a helper that stepped once (a checkpoint
                # maker, say) does not add to the training loop's steps.
                per_optimizer = row.get("steps") or {}
                steps = max([steps, *(int(v) for v in per_optimizer.values())])  # type: ignore[union-attr]
                trace.started = {int(k): int(v) for k, v in per_optimizer.items()}  # type: ignore[union-attr]
                if row.get("error"):
                    errors[rank] = str(row["error"])
                if row.get("in_step"):
                    in_step[rank] = row["in_step"]  # type: ignore[assignment]
    # A rank that never wrote its closing record crashed hard or was killed; count its steps from
    # the trace if there is one.
    for trace in traces.values():
        steps = max(steps, len(trace.losses()))
    return RunReport(
        script=display_path(os.path.abspath(script), path_map),
        nproc=nproc,
        findings=merge_findings(findings),
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        timeout=timeout,
        duration=result.duration,
        output_tail=result.output_tail,
        errors=errors,
        in_step=in_step,
        steps=steps,
        unfinished=sorted(set(started) - set(ended)),
        traces=traces,
        killed=len(result.killed),
        nodes=list(nodes or ()),
        rank_names=_rank_names(result.records, nodes or ()),
    )


def exit_status(report: RunReport) -> int:
    """0 clean; 1 when an error-class finding fired or the script failed (never hidden behind a 0);
    3 (multi-node) when some node never reported, whatever the others found."""
    if report.missing_nodes:
        return INCOMPLETE_EXIT_CODE
    return 1 if has_error(report.findings) or report.failed else 0


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word}es" if word.endswith("s") else f"{n} {word}s"


def script_status(report: RunReport) -> str:
    if report.timed_out:
        return (f"script timed out after {report.timeout:g}s and was stopped "
                f"({_plural(report.killed, 'process')} signalled)")
    if not report.failed:
        return f"script exited 0 after {_plural(report.steps, 'optimizer step')}"
    text = f"script failed with exit code {report.exit_code}"
    error = report.first_error()
    if error:
        rank = min(report.errors)
        where = report.in_step.get(rank)
        during = f" during {where['optimizer']} step {where['step']}" if where else ""
        text += f" ({report.rank_label(rank)}: {error}{during})"
    return text


def render_finding(finding: RuntimeFinding, report: Optional[RunReport] = None) -> List[str]:
    lines = [f"{finding.path}:{finding.line}: {finding.code} [{finding.severity}] {finding.message}"]
    for rel in finding.related:
        lines.append(f"    {rel.path}:{rel.line}: {rel.note}")
    for text in finding.evidence:
        lines.append(f"    also: {text}")
    names = report.rank_names if report is not None else {}
    ranks = ", ".join(f"{r} ({names[r]})" if r in names else str(r) for r in finding.ranks)
    when = f", first at step {finding.step}" if finding.step is not None else ", before any step"
    lines.append(f"    seen on {'rank' if len(finding.ranks) == 1 else 'ranks'} {ranks}{when}")
    return lines


def render_text(report: RunReport) -> str:
    lines: List[str] = []
    for finding in report.findings:
        lines.extend(render_finding(finding, report))
    if report.unfinished and not report.timed_out:
        names = [f"{r} ({report.rank_names[r]})" if r in report.rank_names else str(r) for r in report.unfinished]
        lines.append(f"ranks that did not finish: {', '.join(names)}")
    for node in report.missing_nodes:
        lines.append(f"node {node.node}{'' if node.host == '?' else f' ({node.host})'} {node.missing}: "
                     f"its ranks' records are not in this report")
    where = f" on {_plural(len(report.nodes), 'node')}" if report.nodes else ""
    lines.append(
        f"ddp-lint run: {_plural(report.n_errors, 'error')}, {_plural(report.n_warnings, 'warning')} "
        f"in {_plural(report.nproc, 'process')}{where}; {script_status(report)}"
    )
    if report.failed and report.output_tail:
        lines.append("last lines of the script's output:")
        lines.extend(f"    | {line}" for line in report.output_tail[-TAIL_SHOWN:])
    return "\n".join(lines) + "\n"


def report_json(report: RunReport) -> Dict[str, object]:
    out = _report_json(report)
    if report.nodes:
        out["nodes"] = [{"node": n.node, "host": n.host, "ranks": n.ranks, "exit_code": n.exit_code,
                         "missing": n.missing} for n in report.nodes]
        out["ranks"] = {str(rank): name for rank, name in sorted(report.rank_names.items())}
    return out


def _report_json(report: RunReport) -> Dict[str, object]:
    return {
        "findings": [f.to_json() for f in report.findings],
        "script_exit_code": report.exit_code,
        "timed_out": report.timed_out,
        "steps": report.steps,
        "errors": {str(rank): text for rank, text in report.errors.items()},
        "unfinished_ranks": report.unfinished,
        "output_tail": report.output_tail[-TAIL_SHOWN:],
        "duration_s": round(report.duration, 3),
    }


def render_json(report: RunReport) -> str:
    return json.dumps(report_json(report), indent=2) + "\n"
