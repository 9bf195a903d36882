"""Entry point of every monitored rank: install the monitor, then run the user's script as `__main__`.

torchrun starts it as `-m ddp_lint.runtime.bootstrap SCRIPT ARGS...`; the single-process launcher
starts it the same way without torchrun. Settings arrive in the DDP_LINT_MONITOR env variable.
"""
from __future__ import annotations

import atexit
import os
import random
import runpy
import sys
import traceback
from typing import List, NoReturn, Optional

from .config import MonitorConfig
from .records import RankRecorder


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1  # SystemExit("message") prints the message and exits 1


def _seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(seed)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def _print_script_traceback(exc: BaseException) -> None:
    """The traceback Python would print for the script alone, without the bootstrap's frames."""
    tb = exc.__traceback__
    while tb is not None and (
        os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(__file__)
        or "runpy" in tb.tb_frame.f_code.co_filename
    ):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
    sys.stderr.flush()


def _close_process_group() -> None:
    # Stopping at --max-steps leaves the script's process group open; close it so torch does
    # not warn about a leaked group at exit.
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception:
        pass


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: python -m ddp_lint.runtime.bootstrap SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    script, script_args = argv[0], argv[1:]
    config = MonitorConfig.from_env()
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    recorder = RankRecorder(config.out_dir, rank, local_rank) if config.out_dir else None

    from .monitor import Monitor, StepLimitReached

    if config.seed is not None:
        _seed_everything(config.seed)
    monitor = Monitor(config, recorder).install()

    sys.argv = [script, *script_args]
    script_dir = os.path.dirname(os.path.abspath(script))
    sys.path[0:1] = [script_dir, *config.extra_sys_path]

    exit_code, error, stopped = 0, None, False
    try:
        runpy.run_path(script, run_name="__main__")
    except StepLimitReached:
        stopped = True
        _close_process_group()
    except SystemExit as exc:
        exit_code = _exit_code(exc.code)
        if exit_code:
            error = f"SystemExit({exc.code!r})"
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)  # what the interpreter prints for sys.exit("message")
    except BaseException as exc:
        exit_code, error = 1, _first_line(exc)
        _print_script_traceback(exc)
    monitor.finish(exit_code, error, stopped)
    if recorder is not None:
        recorder.close()
    return exit_code


def exit_without_teardown(code: int) -> NoReturn:
    """Leave the rank once the script and its atexit handlers are done, skipping interpreter teardown.

    In torch 2.13 a gloo process group that is freed during teardown, after the script's own
    destroy_process_group(), aborts its rank ("terminate called without an active exception") in
    about 1 run in 20 of a 2-rank DDP script (5 of 90 under plain torchrun on this machine; 0 of
    90 when the rank left with os._exit). That abort is torch's, not the script's, and would turn
    a clean run into a crash in the report.
    """
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed or broken stream cannot be flushed; nothing is left to say
                pass
        os._exit(code)


if __name__ == "__main__":
    exit_without_teardown(main())
