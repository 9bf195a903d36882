"""Start a monitored script (through torchrun, or directly for one process), bound it by a timeout, clean up.

torchrun puts each worker in its own session, so killing torchrun's process group does not reach
the workers. On a timeout the launcher therefore collects the whole process tree first, asks
torchrun to stop, and then kills every process of the tree and their groups.

The timeout counts from the launch. With `LaunchSpec.start_timeout` set it counts instead from the
moment every rank has written its start record (Python started, torch imported, the monitor
installed), which takes from seconds to minutes depending on the machine's load; the ranks then get
`start_timeout` seconds from the launch to get there.
"""
from __future__ import annotations

import collections
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Deque, Dict, List, Optional, TextIO, Tuple

from .config import MonitorConfig
from .nodes import NodeLaunch
from .records import START, read_records

# The directory that holds the `ddp_lint` package, put first on the ranks' PYTHONPATH so they
# import the same ddp_lint as the parent, installed or not.
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT_EXIT_CODE = 124
_GRACE_SECONDS = 5.0
_START_POLL_SECONDS = 0.1


_LINUX = sys.platform.startswith("linux")
# On one node of a multi-node job, torchrun must not outlive this node's `ddp-lint run` if that is
# killed outright (SIGKILL, a node's job step torn down): the kernel sends torchrun SIGTERM when its
# parent dies (prctl PR_SET_PDEATHSIG, kept across exec), and torchrun then stops its workers.
_PARENT_DEATH_SHIM = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(143)  # the parent died before prctl took effect\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


@dataclass
class LaunchSpec:
    script: str
    script_args: List[str] = field(default_factory=list)
    nproc: int = 1
    launcher: str = "auto"  # "auto" | "torchrun" | "direct"
    timeout: float = 600.0
    # None: `timeout` counts from the launch. A number: `timeout` counts from the moment every rank
    # has written its start record, and the run is stopped (as timed out) if that has not happened
    # this many seconds after the launch.
    start_timeout: Optional[float] = None
    config: MonitorConfig = field(default_factory=MonitorConfig)
    python: str = sys.executable
    echo: Optional[TextIO] = None  # where the script's output is copied as it runs
    tail_lines: int = 120  # torchrun's failure report alone takes ~30 of them
    # One node of a multi-node job: torchrun joins the rendezvous these name instead of --standalone;
    # `nproc` stays the ranks of this node.
    nodes: Optional[NodeLaunch] = None
    # Set from outside (node 0, when another node died): the ranks get `stop_grace` seconds to end on
    # their own (their collectives fail), then every process is stopped as at a timeout.
    stop: Optional[threading.Event] = None
    stop_grace: float = 10.0

    def uses_torchrun(self) -> bool:
        return (self.nodes is not None or self.launcher == "torchrun"
                or (self.launcher == "auto" and self.nproc > 1))


@dataclass
class LaunchResult:
    exit_code: int
    timed_out: bool
    duration: float
    output_tail: List[str]
    records: Dict[int, List[Dict[str, object]]]
    command: List[str]
    killed: List[int] = field(default_factory=list)
    # Seconds from the launch until every rank had written its start record; only measured with
    # `LaunchSpec.start_timeout` (None otherwise, and when some rank never started).
    all_started_after: Optional[float] = None


def free_port(consecutive: int = 1) -> int:
    """A free local port; with `consecutive`, one whose next ports are free too (a multi-node run
    collects its reports on the rendezvous port + 1, and `verify` uses + 2)."""
    for _ in range(64):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port + consecutive <= 65536 and all(_is_free(port + offset) for offset in range(1, consecutive)):
            return port
    return port


def _is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def build_command(spec: LaunchSpec) -> List[str]:
    bootstrap = ["-m", "ddp_lint.runtime.bootstrap", spec.script, *spec.script_args]
    if not spec.uses_torchrun():
        return [spec.python, *bootstrap]
    if spec.nodes is not None:
        torchrun = [spec.python, "-m", "torch.distributed.run", *spec.nodes.torchrun_args(),
                    "--nproc-per-node", str(spec.nproc), *bootstrap]
        return [spec.python, "-c", _PARENT_DEATH_SHIM, str(os.getpid()), *torchrun] if _LINUX else torchrun
    return [
        spec.python, "-m", "torch.distributed.run",
        "--standalone",  # c10d rendezvous on a free local port: parallel runs do not collide
        "--nproc-per-node", str(spec.nproc),
        "--max-restarts", "0",
        *bootstrap,
    ]


def build_env(spec: LaunchSpec, out_dir: str, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ if base is None else base)
    config = MonitorConfig(**{**spec.config.__dict__, "out_dir": out_dir})
    env["DDP_LINT_MONITOR"] = config.to_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    # torchrun warns and sets 1 itself when this is unset; setting it keeps the output clean.
    env.setdefault("OMP_NUM_THREADS", "1")
    if not spec.uses_torchrun():
        # What torchrun would give a single worker, so env:// process groups work without it.
        env.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1",
                   GROUP_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    return env


def _children_map() -> Dict[int, List[int]]:
    children: Dict[int, List[int]] = collections.defaultdict(list)
    try:
        names = os.listdir("/proc")
    except OSError:
        return children
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces or parentheses; split after the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1:
            children[int(fields[1])].append(int(name))
    return children


def process_tree(pid: int) -> List[int]:
    """All descendants of `pid` (Linux /proc; empty elsewhere)."""
    children = _children_map()
    out: List[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def is_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            stat = handle.read()
        return stat[stat.rfind(")") + 2:].split()[0] != "Z"
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _signal(pid: int, sig: int, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (OSError, ProcessLookupError):
        pass


def terminate_tree(proc: "subprocess.Popen[bytes]") -> List[int]:
    """Stop `proc` and every descendant, politely first; returns the pids that were signalled."""
    tree = process_tree(proc.pid)
    _signal(proc.pid, signal.SIGTERM, group=True)
    for pid in tree:
        _signal(pid, signal.SIGTERM, group=False)
    deadline = time.monotonic() + _GRACE_SECONDS
    while time.monotonic() < deadline and (proc.poll() is None or any(is_alive(p) for p in tree)):
        time.sleep(0.1)
    tree = sorted(set(tree) | set(process_tree(proc.pid)))
    _signal(proc.pid, signal.SIGKILL, group=True)
    for pid in tree:
        # Workers lead their own sessions (torchrun starts them so); their groups hold their children.
        _signal(pid, signal.SIGKILL, group=True)
        _signal(pid, signal.SIGKILL, group=False)
    try:
        proc.wait(timeout=_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    return [proc.pid, *tree]


def _kill_leftovers(launcher_pid: int, records: Dict[int, List[Dict[str, object]]]) -> List[int]:
    """Kill what survived a finished run: the launcher's process group and each rank's group.

    The ranks lead their own groups under torchrun; their pids come from the ranks' start records.
    """
    groups = [launcher_pid]
    for rows in records.values():
        groups.extend(int(row["pid"]) for row in rows if row.get("kind") == "start" and row.get("pid"))  # type: ignore
    for pgid in groups:
        _signal(pgid, signal.SIGKILL, group=True)
    return groups


# torchrun's own log lines ("W1202 13:55:58.476000 18492 .../torch/distributed/elastic/...").
_LAUNCHER_LOG = re.compile(r"^[DIWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ .*torch/distributed/(elastic|run)")


def script_lines(lines: List[str]) -> List[str]:
    """The output without torchrun's own logging and its closing ChildFailedError report.

    When a rank fails, torchrun ends the output with its traceback and a banner; the lines worth
    showing are the rank's own, just before.
    """
    out: List[str] = []
    for index, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last):") and _is_launcher_traceback(lines[index + 1:]):
            break
        if not _LAUNCHER_LOG.match(line):
            out.append(line)
    return out


def _is_launcher_traceback(after: List[str]) -> bool:
    for line in after:
        if not line.startswith(" "):  # the frames end at the exception line
            return False
        if 'torch/distributed/run.py"' in line:
            return True
    return False


def _pump(stream: "TextIO", tail: Deque[str], echo: Optional[TextIO]) -> None:
    for raw in iter(stream.readline, ""):
        line = raw.rstrip("\n")
        tail.append(line)
        if echo is not None:
            try:
                echo.write(raw)
                echo.flush()
            except (OSError, ValueError):
                echo = None


def _all_started(out_dir: str, nproc: int) -> bool:
    # Counted, not looked up as ranks 0..nproc-1: on node k of a multi-node job the ranks are global.
    records = read_records(out_dir)
    return sum(1 for rows in records.values() if any(row.get("kind") == START for row in rows)) >= nproc


def _wait(proc: "subprocess.Popen[str]", spec: LaunchSpec, out_dir: str,
          started: float) -> Tuple[bool, Optional[float]]:
    """Wait for the script to end or run out of time: (timed out, when every rank had started).

    When every rank had started is measured (in seconds after the launch) only with start_timeout.
    """
    if spec.stop is not None:
        return _wait_or_stop(proc, spec, started), None
    if spec.start_timeout is None:
        try:
            proc.wait(timeout=spec.timeout)
        except subprocess.TimeoutExpired:
            return True, None
        return False, None
    start_deadline = started + spec.start_timeout
    while not _all_started(out_dir, spec.nproc):
        left = start_deadline - time.monotonic()
        if left <= 0:
            return True, None
        try:
            proc.wait(timeout=min(_START_POLL_SECONDS, left))
            return False, None  # ended before every rank started (a crash, a bad script path)
        except subprocess.TimeoutExpired:
            pass
    all_started_after = time.monotonic() - started
    try:
        proc.wait(timeout=spec.timeout)
    except subprocess.TimeoutExpired:
        return True, all_started_after
    return False, all_started_after


def _wait_or_stop(proc: "subprocess.Popen[str]", spec: LaunchSpec, started: float) -> bool:
    """`_wait` for a run that `spec.stop` may end early; True when it must be stopped (timeout or stop)."""
    assert spec.stop is not None
    deadline = started + spec.timeout
    while time.monotonic() < deadline:
        if spec.stop.is_set():
            deadline = min(deadline, time.monotonic() + spec.stop_grace)
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                return False
            except subprocess.TimeoutExpired:
                return True
        try:
            proc.wait(timeout=_START_POLL_SECONDS * 5)
            return False
        except subprocess.TimeoutExpired:
            pass
    return proc.poll() is None


def launch(spec: LaunchSpec) -> LaunchResult:
    """Run the script under the monitor and collect every rank's records."""
    command = build_command(spec)
    tail: Deque[str] = collections.deque(maxlen=spec.tail_lines)
    with tempfile.TemporaryDirectory(prefix="ddp-lint-run-") as out_dir:
        env = build_env(spec, out_dir)
        started = time.monotonic()
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, start_new_session=True, text=True, encoding="utf-8", errors="replace",
        )
        assert proc.stdout is not None
        reader = threading.Thread(target=_pump, args=(proc.stdout, tail, spec.echo), daemon=True)
        reader.start()
        killed: List[int] = []
        try:
            timed_out, all_started_after = _wait(proc, spec, out_dir, started)
        except BaseException:
            terminate_tree(proc)
            raise
        stopped_early = timed_out and spec.stop is not None and spec.stop.is_set()
        if timed_out:
            killed = terminate_tree(proc)
        # Stopped because another node died, not for running too long: the exit code says a signal.
        timed_out = timed_out and not stopped_early
        reader.join(timeout=_GRACE_SECONDS)
        records = read_records(out_dir)
        if reader.is_alive():
            # Something the script started outlived it and still holds the output pipe.
            killed += _kill_leftovers(proc.pid, records)
            reader.join(timeout=_GRACE_SECONDS)
        exit_code = TIMEOUT_EXIT_CODE if timed_out else (proc.returncode if proc.returncode is not None else 1)
        if exit_code < 0:
            exit_code = 128 - exit_code  # killed by a signal: the shell's convention
        return LaunchResult(
            exit_code=exit_code,
            timed_out=timed_out,
            duration=time.monotonic() - started,
            output_tail=script_lines(list(tail)) if spec.uses_torchrun() else list(tail),
            records=records,
            command=command,
            killed=killed,
            all_started_after=all_started_after,
        )
