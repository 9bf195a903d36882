"""Time a small CPU training loop with and without the ddp-lint runtime monitor; print the overhead.

    python benchmarks/runtime_overhead.py [--steps 300] [--trials 15] [--check-every 20]

The monitor is installed in-process exactly as `ddp-lint run` installs it in each rank (same
class, same default check frequency). Two measurements:

- A/B: trials alternate between plain and monitored; per-step CPU time of this process is
  compared (medians, paired per-trial medians, best trials). On a quiet machine this is the
  number to quote; on a shared one its noise is larger than the effect.
- direct: the same monitored loop with a stopwatch around every monitor entry point (step
  hooks, forward hooks while they are installed, the backward wrapper's own work), divided by
  the plain step time. Robust to load, but blind to indirect costs (a module call takes torch's
  slower path while global forward hooks are installed), so both are printed.

Not a test.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from ddp_lint.runtime.config import DEFAULT_CHECK_EVERY, MonitorConfig  # noqa: E402
from ddp_lint.runtime.monitor import Monitor  # noqa: E402


class TimedMonitor(Monitor):
    """The real monitor with a stopwatch on each of its entry points inside the training loop."""

    spent = 0.0

    def _timed(self, method, *args):
        start = time.perf_counter()
        try:
            return method(*args)
        finally:
            TimedMonitor.spent += time.perf_counter() - start

    def _on_step_pre(self, *args):
        return self._timed(super()._on_step_pre, *args)

    def _on_step_post(self, *args):
        return self._timed(super()._on_step_post, *args)

    def _on_forward_pre(self, *args):
        return self._timed(super()._on_forward_pre, *args)

    def _on_forward_post(self, *args):
        return self._timed(super()._on_forward_post, *args)

    def _wrap_backward(self, original):
        # Time the wrapper's own work (recording the loss), not the backward pass it calls.
        recorder = super()._wrap_backward(lambda *a, **k: None)

        def backward(tensors, *args, **kwargs):
            self._timed(recorder, tensors)
            return original(tensors, *args, **kwargs)

        return backward


def build():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(64, 256), nn.ReLU(),
        nn.Linear(256, 256), nn.ReLU(),
        nn.Linear(256, 256), nn.ReLU(),
        nn.Linear(256, 10),
    )
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)


def loop(model, optimizer, batches) -> float:
    """CPU seconds of this process per step (time spent descheduled is not the monitor's)."""
    start = time.process_time()
    for x, y in batches:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    return (time.process_time() - start) / len(batches)


def trial(monitor_class, batches, check_every: int) -> float:
    if monitor_class is None:
        model, optimizer = build()
        return loop(model, optimizer, batches)
    with monitor_class(MonitorConfig(check_every=check_every)) as monitor:
        model, optimizer = build()  # built under the monitor, as in a monitored script
        per_step = loop(model, optimizer, batches)
    assert monitor.findings == [], monitor.findings
    return per_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--trials", type=int, default=15)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--check-every", type=int, default=DEFAULT_CHECK_EVERY)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    batches = [(torch.randn(args.batch, 64, generator=g), torch.randint(0, 10, (args.batch,), generator=g))
               for _ in range(args.steps)]

    for kind in (None, Monitor, TimedMonitor):  # warm-up: lazy imports, allocator, first-step state
        trial(kind, batches[:50], args.check_every)
    plain, monitored = [], []
    for _ in range(args.trials):
        plain.append(trial(None, batches, args.check_every))
        monitored.append(trial(Monitor, batches, args.check_every))
    TimedMonitor.spent = 0.0
    for _ in range(args.trials):
        trial(TimedMonitor, batches, args.check_every)
    direct = TimedMonitor.spent / (args.trials * args.steps)

    base, with_monitor = statistics.median(plain), statistics.median(monitored)
    overhead = 100.0 * (with_monitor - base) / base
    paired = statistics.median(100.0 * (m - p) / p for p, m in zip(plain, monitored))
    best = 100.0 * (min(monitored) - min(plain)) / min(plain)
    n_params = sum(p.numel() for p in build()[0].parameters())
    print(f"model: 4-layer MLP, {n_params} parameters, batch {args.batch}, AdamW, {args.threads} thread(s), "
          f"torch {torch.__version__}")
    print(f"steps per trial: {args.steps}, trials: {args.trials}, full checks at steps 1-3 and every "
          f"{args.check_every} steps")
    print(f"plain step:     {base * 1e6:8.1f} us CPU (median; trials {min(plain) * 1e6:.0f}-{max(plain) * 1e6:.0f})")
    print(f"monitored step: {with_monitor * 1e6:8.1f} us CPU (median; trials "
          f"{min(monitored) * 1e6:.0f}-{max(monitored) * 1e6:.0f})")
    print(f"A/B overhead:   {overhead:+.2f}% (medians), {paired:+.2f}% (paired median), {best:+.2f}% (best trials)")
    print(f"direct:         {direct * 1e6:.1f} us of monitor code per step = {100.0 * direct / base:.2f}% of the "
          f"plain step")


if __name__ == "__main__":
    main()
