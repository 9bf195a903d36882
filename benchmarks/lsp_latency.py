#!/usr/bin/env python
"""How long `ddp-lint server` takes to publish diagnostics after an edit, in a ~3,000-line training file.

    python benchmarks/lsp_latency.py [--changes 20] [--bursts 5] [--debounce-ms 150] [--lines 3000] [--keep FILE]

Not a test. It writes a generated training script (many functions: data, metrics, logging, several
training loops, three of which build the optimizer before moving the model: 3 findings in 3,000
lines), starts the server as an editor would (`python -m ddp_lint server`, stdio), opens the file,
then makes N edits one after the other, each waiting for its diagnostics. Every edit changes the
first training loop (alternately adding and removing one more finding), so every check has real
work and a different answer.

How the debounce is counted: a change to a quiet buffer (no change to it for `debounceMs`, no check
pending) is checked at once; the changes that follow within `debounceMs` are debounced, and the last of
them is checked `debounceMs` after it. So two numbers: "change to a quiet buffer" (each of the N edits
waits for its diagnostics and a quiet spell; this is one edit, a paste, an undo), and "burst" (B bursts
of 5 changes 50 ms apart, as typing: from the last change of a burst to its diagnostics, the debounce
included). Both include the round trip over stdio, the check on the server's worker thread and the
conversion to LSP. For comparison, after each edit's diagnostics arrive, the same check is run in this
process (`pipeline.check` with the project index and a Reparser, as the server's worker runs it: the
engine's own cost), so both see the same load on the machine, and once more parsing the whole text
(as the CLI does, and the server did before it kept each buffer's unchanged top-level statements parsed).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

from lsprotocol import types
from pygls.lsp.client import LanguageClient

_TRAIN = '''def train_{i}(args, device, loader):
    """Training stage {i}."""
    model = Net{k}(args.width)
    {first}
    {second}
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
    for epoch in range(args.epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
    return model


'''

_HELPERS = [
    '''def load_rows_{i}(path, limit=None):
    """Read a CSV file into rows of floats."""
    rows = []
    with open(path) as handle:
        for number, line in enumerate(handle):
            if limit is not None and number >= limit:
                break
            fields = line.strip().split(",")
            rows.append([float(f) for f in fields if f])
    return rows


''',
    '''def running_mean_{i}(values, window=10):
    """The mean of the last `window` values at each step."""
    out = []
    total = 0.0
    for index, value in enumerate(values):
        total += value
        if index >= window:
            total -= values[index - window]
        out.append(total / min(index + 1, window))
    return out


''',
    '''def accuracy_{i}(logits, labels):
    """Fraction of rows whose arg-max is the label."""
    correct = (logits.argmax(-1) == labels).sum().item()
    return correct / max(len(labels), 1)


''',
    '''class Meter{i}:
    """Keeps a sum and a count."""

    def __init__(self):
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.total += value * n
        self.count += n

    @property
    def average(self):
        return self.total / max(self.count, 1)


''',
    '''def log_metrics_{i}(step, metrics, writer=None):
    """Print metrics, and write them to a summary writer when there is one."""
    text = " ".join(f"{{key}}={{value:.4f}}" for key, value in sorted(metrics.items()))
    print(f"step {{step}}: {{text}}")
    if writer is not None:
        for key, value in metrics.items():
            writer.add_scalar(key, value, step)


''',
    '''def parse_schedule_{i}(spec):
    """'10:0.1,20:0.01' -> [(10, 0.1), (20, 0.01)]."""
    steps = []
    for part in spec.split(","):
        if not part:
            continue
        epoch, rate = part.split(":")
        steps.append((int(epoch), float(rate)))
    return sorted(steps)


''',
]


def training_file(lines: int = 3000) -> str:
    """A training script of about `lines` lines: helpers, model classes and training functions; the
    training functions 3, 11 and 19 build the optimizer before `model.to(device)`."""
    parts = ["import os\nimport torch\nimport torch.nn as nn\n\n\n"]
    for k in range(4):
        parts.append(f"class Net{k}(nn.Module):\n    def __init__(self, width):\n        super().__init__()\n"
                     f"        self.body = nn.Sequential(nn.Linear(32, width), nn.ReLU(), nn.Linear(width, 10))\n\n"
                     f"    def forward(self, x):\n        return self.body(x)\n\n\n")
    i = 0
    while sum(part.count("\n") for part in parts) < lines - 40:
        parts.append(_HELPERS[i % len(_HELPERS)].format(i=i))
        if i % 6 == 5:
            buggy = (i // 6) in (3, 11, 19)
            parts.append(_train(i // 6, buggy))
        i += 1
    parts.append('if __name__ == "__main__":\n    print("see train_0")\n')
    return "".join(parts)


def _train(i: int, buggy: bool) -> str:
    build = "optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)"
    move = "model.to(device)"
    first, second = (build, move) if buggy else (move, build)
    return _TRAIN.format(i=i, k=i % 4, first=first, second=second)


def edited(text: str, n: int) -> str:
    """The n-th edit: training function 0 alternately gets the bug and loses it (one more finding)."""
    start = text.index("def train_0(")
    end = text.index("return model", start)
    body = text[start:end]
    good = "    model.to(device)\n    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)\n"
    bad = "    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)\n    model.to(device)\n"
    body = body.replace(good, bad) if n % 2 else body.replace(bad, good)
    return text[:start] + body + f"# edit {n}\n    " + text[end:]


async def measure(path: Path, changes: int, debounce_ms: int, bursts: int = 5) -> Dict[str, List[float]]:
    engine = _engine(path)
    client = LanguageClient("lsp-latency", "1")
    arrived: Dict[int, float] = {}
    counts: Dict[int, int] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        if params.version is not None:
            arrived.setdefault(params.version, time.perf_counter())
            counts[params.version] = len(params.diagnostics)

    await client.start_io(sys.executable, "-m", "ddp_lint", "server")
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=path.parent.as_uri(),
        initialization_options={"debounceMs": debounce_ms}))
    client.initialized(types.InitializedParams())
    uri = path.as_uri()
    text = path.read_text()
    sent = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await _wait(arrived, 1)
    result: Dict[str, List[float]] = {
        "open": [arrived[1] - sent], "change": [], "findings": [counts[1]], "engine": [], "whole": []}
    engine(text)  # this process's imports and caches, as the server's after opening the file
    version = 1

    def send(new_text: str) -> float:
        nonlocal version
        version += 1
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=new_text)]))
        return time.perf_counter()

    quiet = debounce_ms / 1000
    for n in range(1, changes + 1):
        text = edited(text, n)
        await asyncio.sleep(quiet)  # the buffer is quiet (the in-process checks below take longer anyway)
        sent = send(text)
        await _wait(arrived, version)
        result["change"].append(arrived[version] - sent)
        result["findings"].append(counts[version])
        incremental, whole = engine(text)
        result["engine"].append(incremental)
        result["whole"].append(whole)
    result["burst"] = []
    for n in range(changes + 1, changes + 1 + bursts * 5, 5):
        await asyncio.sleep(quiet)
        for k in range(5):
            text = edited(text, n + k)
            sent = send(text)
            if k < 4:
                await asyncio.sleep(0.05)
        await _wait(arrived, version)
        result["burst"].append(arrived[version] - sent)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return result


async def _wait(arrived: Dict[int, float], version: int, timeout: float = 120) -> None:
    deadline = time.perf_counter() + timeout
    while version not in arrived:
        if time.perf_counter() > deadline:
            raise SystemExit(f"no diagnostics for version {version} within {timeout} s")
        await asyncio.sleep(0.001)


def _engine(path: Path):
    """`pipeline.check` of a text of the file in this process, as the server's worker runs it (with
    the buffer's Reparser), and with a whole parse as the CLI runs it; returns the seconds each took."""
    from ddp_lint.frontends.lsp_documents import Snapshot
    from ddp_lint.parsing import Reparser
    from ddp_lint.pipeline import check, project_index
    from ddp_lint.workspace.configs import Resolver

    resolved = Resolver(cwd=str(path.parent)).for_path(str(path))
    reparser = Reparser()

    def run(text: str) -> Tuple[float, float]:
        document = Snapshot(path.as_uri(), str(path), 1, text=text).document()
        project = project_index(resolved.settings, resolved.root)
        start = time.perf_counter()
        check(document, resolved.settings, project, reparser=reparser)
        middle = time.perf_counter()
        check(document, resolved.settings, project)
        return middle - start, time.perf_counter() - middle

    return run


def _summary(name: str, values: List[float]) -> str:
    ms = [v * 1000 for v in values]
    return (f"{name:<34} median {statistics.median(ms):7.0f} ms   min {min(ms):7.0f} ms   max {max(ms):7.0f} ms"
            f"   (n={len(ms)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--debounce-ms", type=int, default=150)
    parser.add_argument("--bursts", type=int, default=5)
    parser.add_argument("--lines", type=int, default=3000)
    parser.add_argument("--keep", default=None, help="also write the generated file here")
    args = parser.parse_args()
    text = training_file(args.lines)
    if args.keep:
        Path(args.keep).write_text(text)
    with tempfile.TemporaryDirectory(prefix="ddp-lint-lsp-") as folder:
        path = Path(folder) / "train_big.py"
        path.write_text(text)
        result = asyncio.run(measure(path, args.changes, args.debounce_ms, args.bursts))
    debounce = args.debounce_ms / 1000
    print(f"file: {text.count(chr(10))} lines; findings per version: {sorted(set(result['findings']))}; "
          f"debounce {args.debounce_ms} ms; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(_summary("open -> diagnostics", result["open"]))
    print(_summary("change to a quiet buffer -> diag.", result["change"]))
    if result["burst"]:
        print(_summary("burst: last change -> diagnostics", result["burst"]))
        print(_summary("  the same, less the debounce", [t - debounce for t in result["burst"]]))
    print(_summary("pipeline.check in process", result["engine"]))
    print(_summary("  the same, parsing the whole text", result["whole"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
