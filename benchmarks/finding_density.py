"""What each finding costs in a large file: text and JSON output against the same file with none.

    python benchmarks/finding_density.py [--runs 3] [--findings 0 10 40]

The base is a real module (torch's `nn/parallel/distributed.py`, about 2,500 lines); N small
functions that each build an optimizer before `.cuda()` are appended, so the file has N fixable
findings. Every fixable finding carries a JSON/SARIF edit, so this shows whether that edit costs a
walk of the whole tree per finding (it did: 5.4 s for 40 findings, 0.3 s for none) or only a walk
down to the changed block.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FINDING = """

def setup_{i}(rank):
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.cuda()
    return model, opt
"""


def base_source() -> str:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        sys.exit("finding_density.py: torch is not installed (pip install torch==2.13.0)")
    return (Path(spec.origin).parent / "nn" / "parallel" / "distributed.py").read_text(encoding="utf-8")


def timed(args, runs: int) -> float:
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--findings", type=int, nargs="+", default=[0, 10, 40])
    args = parser.parse_args()
    base = base_source()
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        for count in args.findings:
            path = Path(folder) / f"findings_{count}.py"
            path.write_text(base + "".join(FINDING.format(i=i) for i in range(count)), encoding="utf-8")
            lines = path.read_text(encoding="utf-8").count("\n")
            for output in ("text", "json"):
                command = [sys.executable, "-m", "ddp_lint", "--no-cache", "--output-format", output, str(path)]
                rows[(count, output)] = timed(command, args.runs)
            print(f"{count:>4} findings ({lines:,} lines): text {rows[(count, 'text')]:.2f} s, "
                  f"json {rows[(count, 'json')]:.2f} s")
    low, high = min(args.findings), max(args.findings)
    if high > low:
        for output in ("text", "json"):
            per = (rows[(high, output)] - rows[(low, output)]) / (high - low) * 1000
            print(f"{output}: {per:.1f} ms per finding")


if __name__ == "__main__":
    main()
