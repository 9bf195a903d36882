"""Speed of ddp-lint against its anchors, measured in one run on the installed torch package's sources.

    python benchmarks/speed.py [--runs 3] [--corpus DIR] [--skip-torchfix] [--skip-flake8]

Prints medians of several runs, peak memory, and the ratios the performance issue asks for:
cold (no cache) -j1 and -j2, warm (cache filled), a bare LibCST parse of every file and of the files
that pass ddp-lint's prefilter, TorchFix (in its own virtual environment: it pins an older libcst),
ruff's default rule set, and flake8 with and without the ddp-lint plugin. Not a test: it installs
anchors into `benchmarks/_work/` and takes minutes.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work"
PYTHON = sys.executable
BIN = Path(sys.executable).parent

# Each measured command runs under this wrapper so that its own peak RSS (children included) is known.
_MEASURE = r"""
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"{wall} {peak} {code}")
"""

_PARSE = r"""
import sys, libcst
from ddp_lint.engine import could_match
only_candidates = sys.argv[1] == "prefiltered"
for path in sys.argv[2:]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    if only_candidates and not could_match(text):
        continue
    try:
        libcst.parse_module(text)
    except Exception:
        pass
"""


def torch_sources() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed in this environment: pip install -c constraints.txt -e '.[runtime]'")
    return Path(list(spec.submodule_search_locations)[0])


def measure(command, runs: int, label: str, setup=None):
    walls, peaks = [], []
    for _ in range(runs):
        if setup:
            setup()
        out = subprocess.run([PYTHON, "-c", _MEASURE, *map(str, command)], capture_output=True, text=True, check=True)
        wall, peak, code = out.stdout.split()
        walls.append(float(wall))
        peaks.append(int(peak))
    result = {"label": label, "median_s": statistics.median(walls), "runs": walls, "peak_mib": max(peaks) / 1024}
    print(f"  {label:<44} {result['median_s']:8.2f} s   peak {result['peak_mib']:7.1f} MiB   runs {', '.join(f'{w:.2f}' for w in walls)}", flush=True)
    return result


def venv_with(name: str, packages) -> Path:
    target = WORK / name
    python = target / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], check=True)
    return target / "bin"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=None, help="default: the installed torch package")
    parser.add_argument("--anchor-runs", type=int, default=1, help="runs for the slow anchors (TorchFix, flake8)")
    parser.add_argument("--skip-torchfix", action="store_true")
    parser.add_argument("--skip-flake8", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the table here")
    args = parser.parse_args()

    corpus = args.corpus or torch_sources()
    files = sorted(str(p) for p in corpus.rglob("*.py"))
    lines = sum(1 for f in files for _ in open(f, encoding="utf-8", errors="replace"))
    print(f"corpus: {corpus} ({len(files)} files, {lines:,} lines); {os.cpu_count()} CPUs; runs: {args.runs}")
    WORK.mkdir(exist_ok=True)
    file_list = WORK / "files.txt"
    file_list.write_text("\n".join(files))
    results = {}
    lint = [BIN / "ddp-lint", "check", "--isolated", "--exit-zero", "--output-format", "json"]

    print("ddp-lint")
    results["cold_j1"] = measure([*lint, "--no-cache", "-j", "1", corpus], args.runs, "ddp-lint cold -j 1")
    results["cold_j2"] = measure([*lint, "--no-cache", "-j", "2", corpus], args.runs, "ddp-lint cold -j 2")
    cache = Path(tempfile.mkdtemp(prefix="ddp-lint-bench-cache-"))
    subprocess.run([*map(str, lint), "--cache-dir", str(cache), str(corpus)], stdout=subprocess.DEVNULL, check=True)
    results["warm"] = measure([*lint, "--cache-dir", cache, corpus], args.runs, "ddp-lint warm (cache filled)")
    # Peak memory is set by the largest file's syntax tree; if results stream, the whole run peaks no higher.
    from ddp_lint.engine import could_match

    parsed = [f for f in files if could_match(Path(f).read_text(encoding="utf-8", errors="replace"), with_wraps=False)]
    largest = max(parsed, key=os.path.getsize)
    results["cold_largest"] = measure([*lint, "--no-cache", "-j", "1", largest], 1, "ddp-lint on the largest parsed file alone")
    shutil.rmtree(cache, ignore_errors=True)

    print("floors")
    results["parse_all"] = measure([PYTHON, "-c", _PARSE, "all", *files], args.anchor_runs, "bare LibCST parse, every file")
    results["parse_prefiltered"] = measure(
        [PYTHON, "-c", _PARSE, "prefiltered", *files], args.runs, "bare LibCST parse, prefiltered files"
    )

    print("anchors")
    ruff_bin = venv_with("ruff-venv", ["ruff"])
    results["ruff_cold"] = measure([ruff_bin / "ruff", "check", "--isolated", "--no-cache", "--exit-zero", corpus], args.runs, "ruff default rules, no cache")
    ruff_cache = Path(tempfile.mkdtemp(prefix="ruff-bench-cache-"))
    ruff_cached = [ruff_bin / "ruff", "check", "--isolated", "--cache-dir", ruff_cache, "--exit-zero", corpus]
    subprocess.run(list(map(str, ruff_cached)), stdout=subprocess.DEVNULL)
    results["ruff_warm"] = measure(ruff_cached, args.runs, "ruff default rules, warm cache")
    shutil.rmtree(ruff_cache, ignore_errors=True)
    if not args.skip_torchfix:
        torchfix_bin = venv_with("torchfix-venv", ["torchfix"])
        results["torchfix"] = measure([torchfix_bin / "torchfix", corpus], args.anchor_runs, "TorchFix (default rules)")
    if not args.skip_flake8:
        plain = venv_with("flake8-venv", ["flake8"])
        results["flake8_plain"] = measure([plain / "flake8", "--exit-zero", "-j", "2", corpus], args.anchor_runs, "flake8 without ddp-lint")
        results["flake8_plugin"] = measure([BIN / "flake8", "--exit-zero", "-j", "2", corpus], args.anchor_runs, "flake8 with the ddp-lint plugin")

    def ratio(a, b):
        return results[a]["median_s"] / results[b]["median_s"] if a in results and b in results else float("nan")

    print("\nratios (target in brackets)")
    table = [
        ("TorchFix / ddp-lint cold -j1", ratio("torchfix", "cold_j1"), ">= 10"),
        ("ddp-lint cold -j1 / prefiltered parse floor", ratio("cold_j1", "parse_prefiltered"), "<= 1.2"),
        ("ddp-lint cold -j1 / parse of every file", ratio("cold_j1", "parse_all"), "(info)"),
        ("ddp-lint warm / ruff (warm cache)", ratio("warm", "ruff_warm"), "<= 2"),
        ("ddp-lint warm / ruff (no cache)", ratio("warm", "ruff_cold"), "(info)"),
        ("ddp-lint -j1 / -j2 (cold)", ratio("cold_j1", "cold_j2"), ">= 1.7"),
        ("flake8 with plugin / without", ratio("flake8_plugin", "flake8_plain"), "<= 1.10"),
        ("peak MiB all files / largest file alone", results["cold_j1"]["peak_mib"] / results["cold_largest"]["peak_mib"], "~1 (streams)"),
    ]
    for name, value, target in table:
        print(f"  {name:<46} {value:6.2f}   [{target}]")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "ratios": {n: v for n, v, _ in table}}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
