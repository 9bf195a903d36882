"""Checks many files across worker processes that claim them, one at a time, from a shared counter.

Why not `concurrent.futures.ProcessPoolExecutor`: on PyTorch's 2,328 files it handed every file
through its call queue, a management thread and a result queue; the parent's share of that ran on
the same two cores as the workers, and each worker waited on the round trip before its next file
(`-j 2` was 1.58-1.66x `-j 1`). Here a worker takes the next index under a lock (microseconds, no
message) and sends its reports back in batches, so the parent only sleeps until a batch arrives.

Files are claimed in the order given (the caller puts the largest first), so a worker that drew a
large file is not also left with a queue of others behind it.

A worker that dies (a signal, an interpreter crash, a bug that raises) costs one file, never the run:
each worker publishes the index it is working on, that file is reported as an error naming how the
process ended, and the files it had finished but not yet sent are checked again in the parent
(under `--fix` those were already written, so the second pass reports what remains, not the fixes).
Where no shared memory or no new process is to be had, the files are checked in this process: with
`-j auto` the default, a sandbox without `/dev/shm` must still get its results.
"""
from __future__ import annotations

import multiprocessing
import time
from multiprocessing.connection import wait
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .pipeline import FileReport

# A batch leaves when it is this large or this old: few messages, yet results keep streaming.
_BATCH_FILES = 64
_BATCH_SECONDS = 0.05
_IDLE = -1

Work = Callable[[str, tuple], FileReport]


def check_in_processes(paths: Sequence[str], work: Work, job: tuple, jobs: int) -> List[FileReport]:
    """`work(path, job)` for every path, in `jobs` processes; reports come back in the paths' order."""
    context = multiprocessing.get_context()
    try:
        counter = context.Value("q", 0)
        current = context.Array("q", [_IDLE] * jobs, lock=False)  # one writer per slot
    except OSError:
        # No shared memory or semaphores here (some sandboxes and serverless hosts): one process.
        return [work(path, job) for path in paths]
    reports: List[Optional[FileReport]] = [None] * len(paths)
    workers: Dict[object, Tuple[multiprocessing.process.BaseProcess, int]] = {}
    try:
        for slot in range(jobs):
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(
                target=_worker, args=(paths, work, job, counter, current, slot, sender), daemon=True
            )
            try:
                process.start()
            except OSError:  # out of processes or memory: go on with the workers already running
                sender.close()
                receiver.close()
                break
            sender.close()  # the parent keeps only the reading end, so a dead worker reads as EOF
            workers[receiver] = (process, slot)
        while workers:
            for receiver in wait(list(workers)):
                try:
                    batch = receiver.recv()
                except (EOFError, OSError):  # OSError: the worker died in the middle of a batch
                    process, slot = workers.pop(receiver)
                    receiver.close()
                    process.join()
                    _blame(process, current[slot], paths, reports)
                    continue
                for index, report in batch:
                    reports[index] = report
    finally:  # reached with workers still running only when the parent was interrupted
        for process, _ in workers.values():
            process.terminate()
        for process, _ in workers.values():
            process.join()
    # Finished by a worker that died before sending them, or never claimed because every worker died
    # (or none could start).
    for index, report in enumerate(reports):
        if report is None:
            reports[index] = work(paths[index], job)
    return reports  # type: ignore[return-value]


def _blame(process, index: int, paths: Sequence[str], reports: List[Optional[FileReport]]) -> None:
    if process.exitcode == 0 or index == _IDLE:
        return
    code = process.exitcode
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    reports[index] = FileReport(paths[index], error=f"internal error: the checking process {how} on this file")


def _worker(paths, work: Work, job: tuple, counter, current, slot: int, sender) -> None:
    batch: List[Tuple[int, FileReport]] = []
    sent = time.monotonic()
    try:
        while True:
            with counter.get_lock():
                index = counter.value
                counter.value = index + 1
            if index >= len(paths):
                break
            current[slot] = index
            batch.append((index, work(paths[index], job)))
            current[slot] = _IDLE
            if len(batch) >= _BATCH_FILES or time.monotonic() - sent >= _BATCH_SECONDS:
                sender.send(batch)
                batch, sent = [], time.monotonic()
        sender.send(batch)
    except KeyboardInterrupt:
        pass  # the parent reports the interruption once
    finally:
        sender.close()
