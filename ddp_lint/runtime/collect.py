"""One report for a multi-node job: node 0 collects every node's records over TCP, no shared filesystem.

Node 0 runs a `Collector` (a TCP server on all interfaces, at the report port) for the whole run.
Every other node's `Sender` connects as its ranks start (a `hello`, retried until the deadline) and
keeps the connection open; when its ranks end it sends its `result` (its ranks' records, exit code,
output tail) and waits for node 0's `done` (the whole job's exit code). A connection that closes
before its result means that node's `ddp-lint run` died; a node never heard of by the deadline
never joined. Messages are JSON lines.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from .launcher import LaunchResult

_RETRY_SECONDS = 0.5
_ACCEPT_POLL_SECONDS = 0.2

NEVER_REPORTED = "never reported"
DIED = "died before reporting (its ddp-lint run lost its connection to node 0)"


def result_payload(node: int, host: str, result: LaunchResult) -> Dict[str, object]:
    return {
        "type": "result", "node": node, "host": host, "exit_code": result.exit_code,
        "timed_out": result.timed_out, "duration": result.duration, "output_tail": result.output_tail,
        "records": {str(rank): rows for rank, rows in result.records.items()}, "killed": len(result.killed),
    }


@dataclass
class NodeResult:
    node: int
    host: str
    exit_code: int
    timed_out: bool
    duration: float
    output_tail: List[str]
    records: Dict[int, List[Dict[str, object]]]
    killed: int = 0

    @classmethod
    def from_payload(cls, data: Dict[str, object]) -> "NodeResult":
        records = {int(k): list(v) for k, v in dict(data.get("records") or {}).items()}  # type: ignore[call-overload]
        get: Any = data.get
        return cls(node=int(get("node")), host=str(get("host", "?")), exit_code=int(get("exit_code", 1)),
                   timed_out=bool(get("timed_out")), duration=float(get("duration", 0.0)),
                   output_tail=list(get("output_tail") or []), records=records, killed=int(get("killed", 0)))

    @classmethod
    def local(cls, node: int, host: str, result: LaunchResult) -> "NodeResult":
        return cls(node, host, result.exit_code, result.timed_out, result.duration, list(result.output_tail),
                   dict(result.records), len(result.killed))


@dataclass
class _Peer:
    host: str = "?"
    connection: Optional[socket.socket] = None
    result: Optional[NodeResult] = None
    lost: bool = False


class Collector:
    """Node 0's TCP server: gathers the other nodes' results until each has reported, died, or the deadline."""

    def __init__(self, port: int, bind: str = "", lost: Optional[threading.Event] = None, job: str = "") -> None:
        self.job = job  # the rendezvous id: a message of another job (a stale node on this port) is ignored
        self._server = socket.create_server((bind, port), reuse_port=False)
        self._server.settimeout(_ACCEPT_POLL_SECONDS)
        self.port = int(self._server.getsockname()[1])
        self._peers: Dict[int, _Peer] = {}
        self._changed = threading.Condition()
        self._closed = False
        self.lost = lost or threading.Event()  # set when some node's connection closed before its result
        self._threads: List[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True, name="ddp-lint-collector")
        self._acceptor.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                connection, _ = self._server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, connection: socket.socket) -> None:
        node: Optional[int] = None
        try:
            with connection.makefile("r", encoding="utf-8") as reader:
                for line in reader:
                    try:
                        message = json.loads(line)
                        if str(message.get("job", "")) != self.job:
                            break
                        node = int(message["node"])
                    except (ValueError, KeyError, TypeError, AttributeError):
                        continue
                    with self._changed:
                        peer = self._peers.setdefault(node, _Peer())
                        peer.host = str(message.get("host", peer.host))
                        peer.connection, peer.lost = connection, False
                        if message.get("type") == "result":
                            peer.result = NodeResult.from_payload(message)
                        self._changed.notify_all()
        except OSError:
            pass
        if node is None:  # another job's node, or not a node at all: it learns at once (EOF)
            try:
                connection.close()
            except OSError:
                pass
        else:
            with self._changed:
                peer = self._peers[node]
                if peer.result is None and peer.connection is connection:
                    peer.lost = True
                    self.lost.set()
                self._changed.notify_all()

    def wait(self, nodes: List[int], deadline: float,
             unseen_deadline: Optional[float] = None) -> Tuple[Dict[int, NodeResult], Dict[int, str]]:
        """The results of `nodes`, and the ones missing with why, once each has an answer or at `deadline`.

        A node never heard of is waited for only until `unseen_deadline` (if given): every node of a
        job that ran connects as soon as its `ddp-lint run` starts, so one still unseen when node 0's
        ranks have ended never joined.
        """
        def pending(node: int) -> bool:
            peer = self._peers.get(node)
            if peer is None:
                return unseen_deadline is None or time.monotonic() < unseen_deadline
            return peer.result is None and not peer.lost

        with self._changed:
            while True:
                left = deadline - time.monotonic()
                if not any(pending(n) for n in nodes) or left <= 0:
                    break
                self._changed.wait(timeout=min(left, 1.0))
            results = {n: self._peers[n].result for n in nodes if n in self._peers and self._peers[n].result}
            missing = {n: (DIED if n in self._peers else NEVER_REPORTED) for n in nodes if n not in results}
            return results, missing  # type: ignore[return-value]

    def hosts(self) -> Dict[int, str]:
        with self._changed:
            return {n: p.host for n, p in self._peers.items()}

    def finish(self, exit_code: int, host: str) -> None:
        """Tell every node that reported the job's exit code, then stop serving."""
        with self._changed:
            connections = [p.connection for p in self._peers.values() if p.connection is not None]
        for connection in connections:
            try:
                connection.sendall((json.dumps({"type": "done", "exit_code": exit_code, "host": host}) + "\n")
                                   .encode("utf-8"))
            except OSError:
                pass
        self.close()

    def close(self) -> None:
        self._closed = True
        try:
            self._server.close()
        except OSError:
            pass
        with self._changed:
            connections = [p.connection for p in self._peers.values() if p.connection is not None]
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
                connection.close()
            except OSError:
                pass


class Sender:
    """A non-zero node's side: announce itself early, deliver its result, learn the job's exit code.

    One connection, read by a background thread: node 0's `done` is kept for `deliver`, and the
    connection closing without one sets `lost` (node 0 died; this node's ranks can stop).
    """

    def __init__(self, host: str, port: int, node: int, local_host: str, deadline: float,
                 lost: Optional[threading.Event] = None, job: str = "") -> None:
        self.job = job
        self.host, self.port, self.node, self.local_host, self.deadline = host, port, node, local_host, deadline
        self.lost = lost or threading.Event()
        self.reply: Optional[Dict[str, object]] = None
        self._socket: Optional[socket.socket] = None
        self._connected = threading.Event()
        self._answered = threading.Event()

    def _line(self, message: Dict[str, object]) -> bytes:
        line = {**message, "node": self.node, "host": self.local_host, "job": self.job}
        return (json.dumps(line, default=str) + "\n").encode()

    def announce(self) -> threading.Thread:
        """Connect in the background while the ranks run (node 0 may start later than this node)."""
        thread = threading.Thread(target=self._run, daemon=True, name="ddp-lint-sender")
        thread.start()
        return thread

    def _run(self) -> None:
        while time.monotonic() < self.deadline:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=5.0)
                sock.sendall(self._line({"type": "hello"}))
                break
            except OSError:
                time.sleep(_RETRY_SECONDS)
        else:
            self._answered.set()
            self._connected.set()
            return
        sock.settimeout(None)
        self._socket = sock
        self._connected.set()
        try:
            with sock.makefile("r", encoding="utf-8") as reader:
                for line in reader:
                    try:
                        message = json.loads(line)
                    except ValueError:
                        continue
                    if message.get("type") == "done":
                        self.reply = message
                        break
        except OSError:
            pass
        if self.reply is None:
            self.lost.set()
        self._answered.set()

    def deliver(self, result: LaunchResult) -> Optional[Dict[str, object]]:
        """Send this node's result, then wait for node 0's `done`; None when node 0 cannot be reached."""
        self._connected.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        sock = self._socket
        if sock is None or self.lost.is_set():
            return None
        try:
            sock.sendall(self._line(result_payload(self.node, self.local_host, result)))
        except OSError:
            return None
        self._answered.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        try:
            sock.close()
        except OSError:
            pass
        return self.reply
