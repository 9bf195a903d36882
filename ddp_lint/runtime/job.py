"""One node's part of a multi-node `ddp-lint run`: launch this node's ranks, then collect (node 0) or send.

Node 0 merges every node's records into one `LaunchResult` (records are keyed by global rank) and
lists the nodes, reported or missing, for the report. The other nodes learn the job's exit code
from node 0, or fall back to their own ranks' report when node 0 cannot be reached.
"""
from __future__ import annotations

import dataclasses
import socket
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .collect import Collector, NodeResult, Sender
from .launcher import TIMEOUT_EXIT_CODE, LaunchResult, LaunchSpec, launch
from .records import START

# How long node 0 waits for the other nodes beyond the run's own timeout (their ranks may have
# started later, and each node stops its own ranks at its timeout before sending).
REPORT_GRACE = 30.0
# How long node 0, its ranks ended, still waits for a node that never connected at all.
UNSEEN_GRACE = 5.0


@dataclass
class NodeStatus:
    node: int
    host: str
    ranks: List[int] = field(default_factory=list)
    exit_code: Optional[int] = None
    missing: Optional[str] = None  # why the node's records are not in the report


@dataclass
class JobOutcome:
    result: LaunchResult  # merged on node 0; this node's own elsewhere
    nodes: List[NodeStatus]  # node 0 only
    reply: Optional[Dict[str, object]] = None  # a non-zero node: node 0's `done` (None: no answer)
    report_at: str = ""  # "HOST:PORT" of node 0's collector
    collector: Optional[Collector] = None  # node 0: still open, to send the job's exit code (`finish`)


def _world_size(records: Dict[int, List[Dict[str, object]]]) -> Optional[int]:
    for rows in records.values():
        for row in rows:
            if row.get("kind") == START and row.get("world_size"):
                return int(row["world_size"])  # type: ignore[call-overload]
    return None


def _expected_nodes(spec: LaunchSpec, records: Dict[int, List[Dict[str, object]]]) -> int:
    """The job's node count: from the ranks' world size (elastic MIN:MAX jobs), else --nnodes' maximum."""
    assert spec.nodes is not None
    world = _world_size(records)
    if world:
        return max(1, -(-world // max(spec.nproc, 1)))
    return spec.nodes.max_nodes


def merge(node_results: List[NodeResult], command: List[str]) -> LaunchResult:
    """All nodes' records as one run: the first failing node's exit code and output (node 0 first)."""
    records: Dict[int, List[Dict[str, object]]] = {}
    for node in node_results:
        records.update(node.records)
    failing = next((n for n in node_results if n.exit_code != 0), None)
    timed_out = any(n.timed_out for n in node_results)
    exit_code = TIMEOUT_EXIT_CODE if timed_out else (failing.exit_code if failing else 0)
    tail: List[str] = []
    if failing is not None:
        prefix = "" if failing.node == 0 else f"[node {failing.node}] "
        tail = [prefix + line for line in failing.output_tail]
    return LaunchResult(exit_code=exit_code, timed_out=timed_out,
                        duration=max((n.duration for n in node_results), default=0.0), output_tail=tail,
                        records=dict(sorted(records.items())), command=command,
                        killed=[0] * sum(n.killed for n in node_results))


def run_node(spec: LaunchSpec) -> JobOutcome:
    """Run this node's ranks; on node 0 also gather the others' results (the caller builds the report)."""
    nodes = spec.nodes
    assert nodes is not None
    host = socket.gethostname()
    report_at = f"{nodes.host}:{nodes.collector_port}"
    started = time.monotonic()
    if nodes.node_rank != 0:
        # Node 0 dying leaves this node's ranks waiting in collectives: stop them soon after.
        sender = Sender(nodes.host, nodes.collector_port, nodes.node_rank, host,
                        deadline=started + spec.timeout + 2 * REPORT_GRACE, lost=spec.stop, job=nodes.rdzv_id)
        sender.announce()
        result = launch(dataclasses.replace(spec, stop=sender.lost))
        return JobOutcome(result, [], sender.deliver(result), report_at)
    # Another node dying leaves this node's ranks waiting in collectives: stop them soon after.
    collector = Collector(nodes.collector_port, lost=spec.stop, job=nodes.rdzv_id)
    try:
        result = launch(dataclasses.replace(spec, stop=collector.lost))
        expected = _expected_nodes(spec, result.records)
        deadline = max(time.monotonic() + REPORT_GRACE, started + spec.timeout + REPORT_GRACE)
        others, missing = collector.wait(list(range(1, expected)), deadline, time.monotonic() + UNSEEN_GRACE)
        hosts = collector.hosts()
    except BaseException:
        collector.close()
        raise
    mine = NodeResult.local(0, host, result)
    reported = [mine, *(others[n] for n in sorted(others))]
    merged = merge(reported, result.command)
    statuses = [NodeStatus(n.node, n.host, sorted(n.records), n.exit_code) for n in reported]
    for node, why in sorted(missing.items()):
        statuses.append(NodeStatus(node, hosts.get(node, "?"), missing=why))
    statuses.sort(key=lambda s: s.node)
    return JobOutcome(merged, statuses, None, report_at, collector)


def finish(outcome: JobOutcome, exit_code: int) -> None:
    """Node 0: send the job's exit code to every node that reported, and close the collector."""
    if outcome.collector is not None:
        outcome.collector.finish(exit_code, socket.gethostname())
