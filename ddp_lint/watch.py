"""`--watch`: check, then check again whenever a file that could change the result changes, until Ctrl-C.

As ruff's watch mode: the screen is cleared before each run, which starts with `Starting linter in
watch mode...` or `File change detected...`. Changes are reported by `watchfiles` (the operating
system's notifications, batched over a short debounce), never by polling the tree ourselves. Only
Python files, notebooks and configuration files count; Ctrl-C stops the watch and exits 0.
"""
from __future__ import annotations

import os
import sys
from typing import Callable, List

from watchfiles import DefaultFilter
from watchfiles import watch as changes

from .config import ConfigError
from .workspace.configs import CONFIG_NAMES
from .workspace.files import SUFFIXES

# ANSI: clear the screen and the scrollback, cursor home (what ruff writes)
CLEAR = "\x1b[2J\x1b[3J\x1b[H"
FIRST_RUN_AFTER_MS = 200


def relevant(path: str) -> bool:
    """Whether a change to `path` can change a result: a file ddp-lint checks or a configuration."""
    name = os.path.basename(path)
    return name.endswith(SUFFIXES) or name in CONFIG_NAMES


class _Filter(DefaultFilter):
    """watchfiles' defaults (no `.git`, `__pycache__`, editor swap files), then only relevant files."""

    def __call__(self, change, path: str) -> bool:
        return super().__call__(change, path) and relevant(path)


def watch(paths: List[str], check: Callable[[], int]) -> int:
    """Run `check` now and after each batch of changes under `paths` (which exist); 0 after Ctrl-C."""
    started = False
    try:
        # The watcher is made when the loop starts; its first timeout (an empty batch) runs the first
        # check, so an edit saved during that check is a change too, never lost. Later timeouts only
        # wake the loop (no file is looked at) and are passed over.
        for batch in changes(*paths, watch_filter=_Filter(), raise_interrupt=True, yield_on_timeout=True,
                             rust_timeout=FIRST_RUN_AFTER_MS):
            if started and not batch:
                continue
            _announce("File change detected..." if started else "Starting linter in watch mode...")
            started = True
            _run(check)
    except KeyboardInterrupt:
        sys.stdout.flush()
    return 0


def _announce(message: str) -> None:
    stream = sys.stdout
    stream.write(CLEAR + message + "\n")
    stream.flush()


def _run(check: Callable[[], int]) -> None:
    """One check; a configuration error is printed and the watch goes on (the next save may fix it)."""
    try:
        check()
    except ConfigError as exc:
        print(f"ddp-lint: configuration error: {exc}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
