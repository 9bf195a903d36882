"""What every scenario shares, so that a scenario file holds only the order under test.

The command line (`--device`), the process group, the data and the training loop live here; the
model, the optimizer and the placement, wrap or cast stay in the scenario, where both the static
rules and the runtime monitor report their lines. `ddp-lint verify` runs a fixed copy beside the
original (`.NAME.ddp-lint-fixed.py`), so the copy imports this module too.
"""
from __future__ import annotations

import argparse
import os
from typing import List, NamedTuple, Optional

import torch
import torch.distributed as dist

STEPS = 4


def requested_device(default: str = "cpu") -> torch.device:
    """The device of a one-process scenario."""
    return torch.device(_arguments(default).device)


class Rank(NamedTuple):
    rank: int
    device: torch.device
    device_ids: Optional[List[int]]  # what DDP wants: the local GPU, or None on CPU


def start_rank(default: str = "cpu") -> Rank:
    """Join the process group torchrun set up: NCCL on CUDA, gloo on CPU."""
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = _arguments(default).device == "cuda"
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo")
    return Rank(dist.get_rank(), device, [local_rank] if cuda else None)


def train(model, optimizer, device: torch.device, rank: Optional[int] = None, dtype=None) -> None:
    """STEPS steps of mean squared error, printing each loss (per rank when there are ranks)."""
    for step in range(STEPS):
        x, y = batch(step, device, rank or 0, dtype)
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        prefix = "" if rank is None else f"rank {rank} "
        print(f"{prefix}step {step} loss {loss.item():.6f}")


def batch(step: int, device: torch.device, rank: int = 0, dtype=None):
    """A batch that differs per step and per rank, so that ranks that stop averaging drift apart."""
    g = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randn(8, 4, generator=g, dtype=dtype)
    y = torch.randn(8, 2, generator=g, dtype=dtype)
    return x.to(device), y.to(device)


def _arguments(default: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default=default)
    return parser.parse_args()
