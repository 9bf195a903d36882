"""Speed of ddp-lint against its anchors, measured in one run on the installed torch package's sources
and on large trees that are not torch.

    python benchmarks/speed.py [--runs 3] [--corpus DIR] [--skip-torchfix] [--skip-flake8]
    python benchmarks/speed.py --skip-torch --runs 3          # the large trees alone (~10 min)

Large trees (`--trees`, default LARGE_TREES: transformers 4.40.2 and two more large packages of the
ecosystem check, fetched into `benchmarks/_work/ecosystem/` as that check fetches them): ddp-lint cold
with project analysis and with `--no-project`, each at `-j 1` and `-j auto`, and ruff's default rules,
CPU (user + system of the command and its children) and wall in one run, with the ratios project /
no-project and ddp-lint / ruff. Torch's own package is not followed by the project index, so its run
says nothing about project analysis; these trees do.

Prints medians of several runs, peak memory, and the ratios the performance issue asks for:
cold (no cache) -j1 and -j2, warm (cache filled), a bare LibCST parse of every file, of the files
that pass ddp-lint's token prefilter (the floor for any LibCST tool that filters on catalog tokens)
and of the files that also pass its syntax stage (what ddp-lint actually parses), TorchFix (in its
own virtual environment: it pins an older libcst; stopped at a time limit on the whole corpus, and
run to the end on a sample of files), ruff's default rule set, and flake8 with and without the
ddp-lint plugin. Not a test: it installs anchors into `benchmarks/_work/` and takes about half an hour.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work"
PYTHON = sys.executable
BIN = Path(sys.executable).parent

# Each measured command runs under this wrapper so that its own peak RSS (children included) is known.
# A command that runs past the limit (argv[1], seconds; 0 for none) is killed with its process group
# and reported with code "timeout": its wall time is then a lower bound.
_MEASURE = r"""
import os, resource, signal, subprocess, sys, time
limit = float(sys.argv[1]) or None
start = time.perf_counter()
child = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
try:
    code = child.wait(timeout=limit)
except subprocess.TimeoutExpired:
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    code = "timeout"
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{wall} {usage.ru_maxrss} {code} {usage.ru_utime + usage.ru_stime}")
"""

# The floors: LibCST's own parse of a list of files, nothing else in the timed process.
_PARSE = r"""
import sys, libcst
for path in open(sys.argv[1]).read().split("\n"):
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
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


def measure(command, runs: int, label: str, setup=None, limit: float = 0):
    walls, cpus, peaks, timed_out = [], [], [], False
    for _ in range(runs):
        if setup:
            setup()
        out = subprocess.run([PYTHON, "-c", _MEASURE, str(limit), *map(str, command)], capture_output=True, text=True, check=True)
        wall, peak, code, cpu = out.stdout.split()
        walls.append(float(wall))
        cpus.append(float(cpu))
        peaks.append(int(peak))
        timed_out = timed_out or code == "timeout"
    result = {"label": label, "median_s": statistics.median(walls), "runs": walls, "cpu_s": statistics.median(cpus),
              "peak_mib": max(peaks) / 1024, "timed_out": timed_out}
    bound = "  (killed at the limit: a lower bound)" if timed_out else ""
    print(f"  {label:<48} {result['median_s']:8.2f} s wall {result['cpu_s']:8.2f} s CPU   peak {result['peak_mib']:7.1f} MiB   "
          f"runs {', '.join(f'{w:.2f}' for w in walls)}{bound}", flush=True)
    return result


def write_list(name: str, files) -> Path:
    path = WORK / name
    path.write_text("\n".join(files))
    return path


def prefilter_counts(files):
    """Which files pass the token stages, and which also the tree stage, for the default selection
    (the runs below use it)."""
    from ddp_lint.prefilter import could_match, tokens_could_match

    texts = {path: Path(path).read_text(encoding="utf-8", errors="replace") for path in files}
    tokens = [path for path in files if tokens_could_match(texts[path], with_wraps=False)]
    return tokens, [path for path in tokens if could_match(texts[path], with_wraps=False)]


def venv_with(name: str, packages) -> Path:
    target = WORK / name
    python = target / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], check=True)
    return target / "bin"


# Large trees of the ecosystem check (not torch, so the project index follows their imports).
LARGE_TREES = ["transformers==4.40.2", "fairseq==0.12.2", "deepspeed==0.14.2"]


def fetch_tree(spec: str) -> Path:
    sys.path.insert(0, str(HERE))
    from lint_pypi import fetch

    work = WORK / "ecosystem"
    try:
        return fetch(spec, work, True, 1800)
    except RuntimeError:  # not downloaded yet
        return fetch(spec, work, False, 1800)


def large_trees(specs, runs: int, ruff_bin: Path) -> dict:
    """Project analysis against --no-project and ruff, CPU and wall, -j 1 and -j auto, on each tree."""
    lint = [BIN / "ddp-lint", "check", "--isolated", "--exit-zero", "--output-format", "json", "--no-cache"]
    ruff = [ruff_bin / "ruff", "check", "--isolated", "--no-cache", "--exit-zero"]
    out = {}
    for spec in specs:
        tree = fetch_tree(spec)
        files = sum(1 for _ in tree.rglob("*.py"))
        print(f"{spec}: {tree} ({files} files)")
        r = out[spec] = {"files": files}
        for jobs in ("1", "auto"):
            r[f"project_j{jobs}"] = measure([*lint, "-j", jobs, tree], runs, f"ddp-lint cold -j {jobs}, project analysis")
            r[f"no_project_j{jobs}"] = measure([*lint, "--no-project", "-j", jobs, tree], runs, f"ddp-lint cold -j {jobs}, --no-project")
        r["ruff"] = measure([*ruff, tree], runs, "ruff default rules, no cache")
    print("\nlarge trees: ratios of medians (CPU / wall); targets: project / no-project <= 1.3, project -j 1 / ruff CPU <= 1.5")
    print(f"  {'tree':<24} {'proj/no-proj -j1':>18} {'proj/no-proj auto':>18} {'proj -j1 / ruff':>16} {'no-proj -j1 / ruff':>19}")
    for spec, r in out.items():
        def both(a, b):
            return f"{r[a]['cpu_s'] / r[b]['cpu_s']:.2f} / {r[a]['median_s'] / r[b]['median_s']:.2f}"
        r["ratios"] = {"project/no_project_j1": both("project_j1", "no_project_j1"),
                       "project/no_project_jauto": both("project_jauto", "no_project_jauto"),
                       "project_j1/ruff": both("project_j1", "ruff"), "no_project_j1/ruff": both("no_project_j1", "ruff")}
        print(f"  {spec:<24} {r['ratios']['project/no_project_j1']:>18} {r['ratios']['project/no_project_jauto']:>18} "
              f"{r['ratios']['project_j1/ruff']:>16} {r['ratios']['no_project_j1/ruff']:>19}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=None, help="default: the installed torch package")
    parser.add_argument("--anchor-runs", type=int, default=1, help="runs for the slow anchors (TorchFix, parse of every file)")
    parser.add_argument("--torchfix-limit", type=float, default=600, help="seconds before TorchFix on the whole corpus is stopped")
    parser.add_argument("--sample-every", type=int, default=20, help="TorchFix and ddp-lint also run on every Nth file, to the end")
    parser.add_argument("--skip-torchfix", action="store_true")
    parser.add_argument("--skip-flake8", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the table here")
    parser.add_argument("--trees", nargs="*", default=LARGE_TREES, metavar="SPEC",
                        help="large non-torch trees to time (default: %(default)s); none with an empty list")
    parser.add_argument("--skip-torch", action="store_true", help="time only the large trees")
    args = parser.parse_args()
    WORK.mkdir(exist_ok=True)
    if args.skip_torch:
        results = {"large_trees": large_trees(args.trees, args.runs, venv_with("ruff-venv", ["ruff"]))}
        if args.json:
            args.json.write_text(json.dumps({"results": results}, indent=2))
        return 0

    corpus = args.corpus or torch_sources()
    files = sorted(str(p) for p in corpus.rglob("*.py"))
    lines = sum(1 for f in files for _ in open(f, encoding="utf-8", errors="replace"))
    print(f"corpus: {corpus} ({len(files)} files, {lines:,} lines); {os.cpu_count()} CPUs; runs: {args.runs}")
    WORK.mkdir(exist_ok=True)
    tokens, reaching = prefilter_counts(files)
    print(f"prefilter (default selection): {len(tokens)} files pass the token stages (text, then code without comments and "
          f"strings); {len(reaching)} also pass the tree stage and reach LibCST")
    results = {"counts": {"files": len(files), "lines": lines, "token_stages": len(tokens), "reaching_libcst": len(reaching)}}
    lint = [BIN / "ddp-lint", "check", "--isolated", "--exit-zero", "--output-format", "json"]

    print("ddp-lint")
    results["cold_j1"] = measure([*lint, "--no-cache", "-j", "1", corpus], args.runs, "ddp-lint cold -j 1")
    results["cold_j2"] = measure([*lint, "--no-cache", "-j", "2", corpus], args.runs, "ddp-lint cold -j 2")
    results["cold_j1_single"] = measure([*lint, "--no-cache", "--no-project", "-j", "1", corpus], args.runs,
                                        "ddp-lint cold -j 1, each file alone (no project index)")
    cache = Path(tempfile.mkdtemp(prefix="ddp-lint-bench-cache-"))
    subprocess.run([*map(str, lint), "--cache-dir", str(cache), str(corpus)], stdout=subprocess.DEVNULL, check=True)
    results["warm"] = measure([*lint, "--cache-dir", cache, corpus], args.runs, "ddp-lint warm (cache filled)")
    # Peak memory is set by the largest file's syntax tree; if results stream, the whole run peaks no higher.
    largest = max(reaching, key=os.path.getsize)
    results["cold_largest"] = measure([*lint, "--no-cache", "-j", "1", largest], 1, "ddp-lint on the largest parsed file alone")
    shutil.rmtree(cache, ignore_errors=True)

    print("floors")
    results["parse_all"] = measure([PYTHON, "-c", _PARSE, write_list("all.txt", files)], args.anchor_runs, "bare LibCST parse, every file")
    results["parse_prefiltered"] = measure(
        [PYTHON, "-c", _PARSE, write_list("tokens.txt", tokens)], args.runs, "bare LibCST parse, token-prefiltered files"
    )
    results["parse_reaching"] = measure(
        [PYTHON, "-c", _PARSE, write_list("reaching.txt", reaching)], args.runs, "bare LibCST parse, files reaching LibCST"
    )

    print("anchors")
    ruff_bin = venv_with("ruff-venv", ["ruff"])
    results["ruff_cold"] = measure([ruff_bin / "ruff", "check", "--isolated", "--no-cache", "--exit-zero", corpus], args.runs, "ruff default rules, no cache")
    ruff_cache = Path(tempfile.mkdtemp(prefix="ruff-bench-cache-"))
    ruff_cached = [ruff_bin / "ruff", "check", "--isolated", "--cache-dir", ruff_cache, "--exit-zero", corpus]
    subprocess.run(list(map(str, ruff_cached)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results["ruff_warm"] = measure(ruff_cached, args.runs, "ruff default rules, warm cache")
    shutil.rmtree(ruff_cache, ignore_errors=True)
    if not args.skip_torchfix:
        torchfix_bin = venv_with("torchfix-venv", ["torchfix"])
        results["torchfix"] = measure([torchfix_bin / "torchfix", corpus], args.anchor_runs, "TorchFix (default rules), every file",
                                      limit=args.torchfix_limit)
        sample = files[:: args.sample_every]
        results["torchfix_sample"] = measure([torchfix_bin / "torchfix", *sample], args.anchor_runs,
                                             f"TorchFix, every {args.sample_every}th file ({len(sample)})")
        results["cold_j1_sample"] = measure([*lint, "--no-cache", "-j", "1", *sample], args.runs,
                                            f"ddp-lint cold -j 1, the same {len(sample)} files")
    if not args.skip_flake8:
        # the same flake8 in this environment, with the plugin dropped from discovery (see flake8_overhead.py)
        shim = [PYTHON, HERE / "flake8_overhead.py", "--shim"]
        results["flake8_plain"] = measure([*shim, "without", "--exit-zero", "-j", "2", corpus], args.runs, "flake8 -j 2 without ddp-lint")
        results["flake8_plugin"] = measure([*shim, "with", "--exit-zero", "-j", "2", corpus], args.runs, "flake8 -j 2 with the ddp-lint plugin")

    def ratio(a, b):
        return results[a]["median_s"] / results[b]["median_s"] if a in results and b in results else float("nan")

    torchfix_bound = ">= 10" + ("; TorchFix was stopped: a lower bound" if results.get("torchfix", {}).get("timed_out") else "")

    print("\nratios (target in brackets)")
    table = [
        ("TorchFix / ddp-lint cold -j1", ratio("torchfix", "cold_j1"), torchfix_bound),
        ("TorchFix / ddp-lint cold -j1, sampled files", ratio("torchfix_sample", "cold_j1_sample"), ">= 10"),
        ("ddp-lint cold -j1 / token-prefiltered parse floor", ratio("cold_j1", "parse_prefiltered"), "<= 1.2"),
        ("ddp-lint cold -j1 / parse of files reaching LibCST", ratio("cold_j1", "parse_reaching"), "(info)"),
        ("ddp-lint cold -j1 / parse of every file", ratio("cold_j1", "parse_all"), "(info)"),
        ("ddp-lint warm / ruff (warm cache)", ratio("warm", "ruff_warm"), "<= 2"),
        ("ddp-lint warm / ruff (no cache)", ratio("warm", "ruff_cold"), "(info)"),
        ("ddp-lint -j1 / -j2 (cold)", ratio("cold_j1", "cold_j2"), ">= 1.7"),
        ("project index: cold -j1 / each file alone", ratio("cold_j1", "cold_j1_single"), "<= 1.3"),
        ("flake8 with plugin / without", ratio("flake8_plugin", "flake8_plain"), "<= 1.10"),
        ("peak MiB all files / largest file alone", results["cold_j1"]["peak_mib"] / results["cold_largest"]["peak_mib"], "~1 (streams)"),
    ]
    for name, value, target in table:
        print(f"  {name:<52} {value:6.2f}   [{target}]")
    if args.trees:
        print()
        results["large_trees"] = large_trees(args.trees, args.runs, ruff_bin)
    if args.json:
        args.json.write_text(json.dumps({"results": results, "ratios": {n: v for n, v, _ in table}}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
