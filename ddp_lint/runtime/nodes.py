"""Multi-node launch options: torchrun's (`--nnodes`, `--node-rank`, `--rdzv-*`) or a SLURM job's environment.

`NodeLaunch` is what one node's `ddp-lint run` passes to `torch.distributed.run` instead of
`--standalone`, plus where node 0 collects every node's records (`report_host:report_port`).
Nodes are named by their ddp-lint node rank (`--node-rank`, or `SLURM_NODEID`): node 0 runs the
collector and prints the report.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Mapping, Optional, Tuple

DEFAULT_RDZV_PORT = 29400  # torchrun's own default for c10d
# SLURM mode without an explicit endpoint: an even port derived from the job id, so that two jobs
# sharing a node get different rendezvous ports and the report port (rendezvous + 1) never meets
# another job's rendezvous port.
SLURM_PORT_BASE = 20000
SLURM_PORT_SPAN = 20000


class NodeOptionError(ValueError):
    """Multi-node options that do not make a launch (one line, reported as usage error, exit 2)."""


@dataclass(frozen=True)
class NodeLaunch:
    nnodes: str  # "N" or "MIN:MAX", as torchrun takes it
    node_rank: int
    rdzv_backend: str
    rdzv_endpoint: str  # HOST:PORT
    rdzv_id: str
    max_restarts: int = 0
    report_port: Optional[int] = None  # None: rendezvous port + 1
    source: str = "options"  # "options" | "slurm"

    @property
    def max_nodes(self) -> int:
        return parse_nnodes(self.nnodes)[1]

    @property
    def min_nodes(self) -> int:
        return parse_nnodes(self.nnodes)[0]

    @property
    def host(self) -> str:
        return split_endpoint(self.rdzv_endpoint)[0]

    @property
    def collector_port(self) -> int:
        if self.report_port is not None:
            return self.report_port
        return split_endpoint(self.rdzv_endpoint)[1] + 1

    def torchrun_args(self) -> List[str]:
        return ["--nnodes", self.nnodes, "--node-rank", str(self.node_rank), "--rdzv-backend", self.rdzv_backend,
                "--rdzv-endpoint", self.rdzv_endpoint, "--rdzv-id", self.rdzv_id,
                "--max-restarts", str(self.max_restarts)]


def parse_nnodes(text: str) -> Tuple[int, int]:
    """torchrun's `--nnodes`: "N" or "MIN:MAX" (1 <= MIN <= MAX)."""
    parts = text.split(":")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise NodeOptionError(f"--nnodes takes N or MIN:MAX, got {text!r}") from None
    if len(values) == 1:
        values = values * 2
    if len(values) != 2 or values[0] < 1 or values[0] > values[1]:
        raise NodeOptionError(f"--nnodes takes N or MIN:MAX with 1 <= MIN <= MAX, got {text!r}")
    return values[0], values[1]


def split_endpoint(endpoint: str, default_port: int = DEFAULT_RDZV_PORT) -> Tuple[str, int]:
    """HOST[:PORT] (an IPv6 host in brackets: [::1]:29400)."""
    match = re.fullmatch(r"\[(?P<v6>[^\]]+)\](?::(?P<p6>\d+))?|(?P<host>[^:]+)(?::(?P<port>\d+))?", endpoint)
    if not match:
        raise NodeOptionError(f"--rdzv-endpoint takes HOST[:PORT], got {endpoint!r}")
    host = match.group("v6") or match.group("host")
    port = match.group("p6") or match.group("port")
    return host, int(port) if port else default_port


def expand_nodelist(text: str) -> List[str]:
    """SLURM's compressed host list, in order: `node[01-03,07]`, `a1,b[2-3]`, `r[1-2]-n[1-2]`."""
    hosts: List[str] = []
    for item in _top_level_items(text.strip()):
        hosts.extend(_expand_item(item))
    return hosts


def _top_level_items(text: str) -> List[str]:
    items, depth, current = [], 0, ""
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise NodeOptionError(f"unbalanced ']' in the SLURM node list {text!r}")
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    if depth != 0:
        raise NodeOptionError(f"unbalanced '[' in the SLURM node list {text!r}")
    items.append(current)
    return [item for item in items if item]


def _expand_item(item: str) -> List[str]:
    match = re.search(r"\[([^\]]*)\]", item)
    if match is None:
        return [item]
    prefix, rest = item[: match.start()], item[match.end():]
    out: List[str] = []
    for part in match.group(1).split(","):
        bounds = part.split("-")
        if len(bounds) == 1 and bounds[0].isdigit():
            numbers = [bounds[0]]
        elif len(bounds) == 2 and all(b.isdigit() for b in bounds) and int(bounds[0]) <= int(bounds[1]):
            width = len(bounds[0])  # node[01-10] keeps its zero padding
            numbers = [str(n).zfill(width) for n in range(int(bounds[0]), int(bounds[1]) + 1)]
        else:
            raise NodeOptionError(f"cannot read {part!r} in the SLURM node list entry {item!r}")
        for number in numbers:
            out.extend(_expand_item(prefix + number + rest))
    return out


def slurm_step_detected(environ: Mapping[str, str]) -> bool:
    """Started by `srun` across more than one node (the automatic SLURM mode's condition).

    SLURM_STEP_NUM_NODES is what srun sets for its tasks: a batch script on a two-node allocation
    (SLURM_NNODES=2, no srun) runs on one node and must not wait for a second.
    """
    if not (environ.get("SLURM_JOB_ID") and environ.get("SLURM_PROCID")):
        return False
    try:
        return int(environ.get("SLURM_STEP_NUM_NODES") or "0") > 1
    except ValueError:
        return True  # let from_slurm say what is wrong


def _slurm_nnodes(environ: Mapping[str, str]) -> int:
    for name in ("SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"):
        if environ.get(name):
            try:
                return int(environ[name])
            except ValueError:
                raise NodeOptionError(f"{name}={environ[name]!r} is not a number") from None
    raise NodeOptionError("SLURM mode needs SLURM_NNODES or SLURM_JOB_NUM_NODES")


def from_slurm(environ: Mapping[str, str], rdzv_endpoint: Optional[str] = None, rdzv_backend: str = "c10d",
               max_restarts: int = 0, report_port: Optional[int] = None) -> NodeLaunch:
    """The launch of this node in a SLURM job started with one task per node (`srun --ntasks-per-node=1`)."""
    job = environ.get("SLURM_JOB_ID") or environ.get("SLURM_JOBID")
    if not job:
        raise NodeOptionError("SLURM mode needs SLURM_JOB_ID (run under srun, or drop --slurm)")
    nnodes = _slurm_nnodes(environ)
    ntasks_text = environ.get("SLURM_STEP_NUM_TASKS") or environ.get("SLURM_NTASKS") or str(nnodes)
    try:
        ntasks = int(ntasks_text)
    except ValueError:
        raise NodeOptionError(f"SLURM_NTASKS={ntasks_text!r} is not a number") from None
    if ntasks != nnodes:
        raise NodeOptionError(f"SLURM mode needs one task per node (srun --ntasks-per-node=1): "
                              f"{ntasks} tasks on {nnodes} nodes")
    node_id = environ.get("SLURM_NODEID") or environ.get("SLURM_PROCID")
    try:
        node_rank = int(node_id or "")
    except ValueError:
        raise NodeOptionError("SLURM mode needs SLURM_NODEID or SLURM_PROCID") from None
    if rdzv_endpoint is None:
        nodelist = (environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST")
                    or environ.get("SLURM_NODELIST"))
        if not nodelist:
            raise NodeOptionError("SLURM mode needs SLURM_NODELIST (or --rdzv-endpoint)")
        hosts = expand_nodelist(nodelist)
        if not hosts:
            raise NodeOptionError(f"SLURM_NODELIST={nodelist!r} names no host")
        digits = int(re.sub(r"\D", "", job) or "0")
        port = SLURM_PORT_BASE + 2 * (digits % (SLURM_PORT_SPAN // 2))
        rdzv_endpoint = f"{hosts[0]}:{port}"
    return NodeLaunch(nnodes=str(nnodes), node_rank=node_rank, rdzv_backend=rdzv_backend,
                      rdzv_endpoint=rdzv_endpoint, rdzv_id=job, max_restarts=max_restarts,
                      report_port=report_port, source="slurm")
