"""Per-rank JSON-lines records: what a monitored rank writes and how the parent reads it back.

Each rank appends to its own file and flushes every line, so whatever a rank found before it
crashed, hung or was killed is still there for the parent.
"""
from __future__ import annotations

import json
import os
from typing import Dict, List, Optional, TextIO

# Record kinds
OPENED = "opened"  # the rank's first line, before torch is imported: its pid and local rank
START = "start"  # the monitor is installed (torch imported), just before the script runs
FINDING = "finding"
INITIAL = "initial"
STEP = "step"
END = "end"


def rank_file(out_dir: str, rank: int) -> str:
    return os.path.join(out_dir, f"rank{rank}.jsonl")


class RankRecorder:
    """Appends records for one rank; every write is flushed so a killed rank loses nothing."""

    def __init__(self, out_dir: str, rank: int, local_rank: Optional[int] = None) -> None:
        os.makedirs(out_dir, exist_ok=True)
        self.rank = rank
        self._file: Optional[TextIO] = open(rank_file(out_dir, rank), "a", encoding="utf-8")
        if local_rank is not None:
            # At once: importing torch can take seconds on a loaded machine, and a rank stopped before
            # the monitor's start record must still be named by its node and local rank.
            self.write(OPENED, pid=os.getpid(), local_rank=local_rank)

    def write(self, kind: str, **payload: object) -> None:
        if self._file is None:
            return
        payload["kind"] = kind
        payload["rank"] = self.rank
        self._file.write(json.dumps(payload, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_records(out_dir: str) -> Dict[int, List[Dict[str, object]]]:
    """All ranks' records, by rank; a torn last line (a rank killed mid-write) is skipped."""
    out: Dict[int, List[Dict[str, object]]] = {}
    if not os.path.isdir(out_dir):
        return out
    for name in sorted(os.listdir(out_dir)):
        if not (name.startswith("rank") and name.endswith(".jsonl")):
            continue
        try:
            rank = int(name[len("rank"):-len(".jsonl")])
        except ValueError:
            continue
        rows: List[Dict[str, object]] = []
        with open(os.path.join(out_dir, name), encoding="utf-8") as handle:
            for line in handle:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    continue
        out[rank] = rows
    return out
