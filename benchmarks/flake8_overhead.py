#!/usr/bin/env python
"""What installing the ddp-lint flake8 plugin costs a flake8 run: wall time with and without it.

Not a test. Both sides run the same flake8 from the same interpreter; "without" drops the plugin
from flake8's plugin discovery (a shim around `flake8.plugins.finder.find_plugins`), so the only
difference is the plugin being loaded and run. Runs alternate (without, with, without, ...) so
that load on a shared machine hits both sides alike; the median of each side is compared, for wall
time and for CPU time (flake8 and its worker processes, user + system), which other load on a
shared machine disturbs far less than wall time.

Two selections are measured:
  default       flake8's default selection, which includes plugin codes: the plugin runs on every
                file (prefilter, and LibCST for the files that pass it). This is the honest cost.
  E9,F63,F7,F82 a selection without DDP: the plugin sees that and does nothing per file.

Usage:
    python benchmarks/flake8_overhead.py [--target DIR] [--runs 3] [--jobs 2] [--selection default|narrow|both]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import time
from typing import List, Optional, Tuple

NARROW = "E9,F63,F7,F82"


def _shim(argv: List[str]) -> int:
    """Runs flake8 in this process, with or without the ddp-lint plugin discovered."""
    mode, rest = argv[0], argv[1:]
    if mode == "without":
        import flake8.plugins.finder as finder

        original = finder.find_plugins

        def without_ddp(cfg, opts):
            return [p for p in original(cfg, opts) if p.package != "ddp-lint"]

        finder.find_plugins = without_ddp
    from flake8.main.cli import main

    main(rest)  # raises SystemExit with flake8's status
    return 0


def _default_target() -> str:
    return os.path.join(sysconfig.get_paths()["purelib"], "torch")


def _count_files(target: str) -> int:
    return sum(1 for _, _, files in os.walk(target) for name in files if name.endswith(".py"))


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(mode: str, target: str, jobs: int, select: Optional[str]) -> Tuple[float, float]:
    """(wall seconds, CPU seconds) of one flake8 run; the pool workers' CPU reaches us through flake8."""
    selection = ["--select", select] if select else []
    command = [sys.executable, os.path.abspath(__file__), "--shim", mode, "-j", str(jobs), *selection, "--exit-zero", target]
    cpu, start = _cpu_of_children(), time.perf_counter()
    completed = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed, used = time.perf_counter() - start, _cpu_of_children() - cpu
    if completed.returncode != 0:
        sys.exit(f"flake8 failed ({mode}): {completed.stderr.strip()[-2000:]}")
    return elapsed, used


def _measure(label: str, target: str, runs: int, jobs: int, select: Optional[str]) -> float:
    without: List[Tuple[float, float]] = []
    with_plugin: List[Tuple[float, float]] = []
    for run in range(runs):
        without.append(_time("without", target, jobs, select))
        with_plugin.append(_time("with", target, jobs, select))
        print(
            f"  [{label}] run {run + 1}: without {without[-1][0]:.1f}s wall / {without[-1][1]:.1f}s CPU, "
            f"with {with_plugin[-1][0]:.1f}s wall / {with_plugin[-1][1]:.1f}s CPU",
            flush=True,
        )
    ratios = []
    for index, name in ((0, "wall"), (1, "CPU")):
        base = statistics.median(t[index] for t in without)
        plugged = statistics.median(t[index] for t in with_plugin)
        ratios.append(plugged / base)
        print(f"{label}, {name}: median without {base:.1f}s, with {plugged:.1f}s, ratio {plugged / base:.3f}", flush=True)
    return ratios[0]


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--shim"]:
        return _shim(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=_default_target(), help="folder to run flake8 on (default: installed torch)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--selection", choices=("default", "narrow", "both"), default="both")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.target):
        sys.exit(f"no such folder: {args.target}")
    print(f"flake8 -j {args.jobs} on {args.target} ({_count_files(args.target)} .py files), {args.runs} runs each", flush=True)
    if args.selection in ("default", "both"):
        _measure("default selection", args.target, args.runs, args.jobs, None)
    if args.selection in ("narrow", "both"):
        _measure(f"--select {NARROW}", args.target, args.runs, args.jobs, NARROW)
    return 0


if __name__ == "__main__":
    sys.exit(main())
