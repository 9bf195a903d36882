"""Fragile, not broken (DDP101): a stateless optimizer built before `.to(device)`.

The move keeps the parameter objects (set_data), SGD has no state yet, so this trains exactly as
the canonical order does; the monitor reports nothing and `verify` finds the fix equivalent.
One process; `--device cuda` makes it a real move.
"""

import torch
from torch import nn

from scenario_support import requested_device, train


def main():
    device = requested_device()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model.to(device)
    train(model, optimizer, device)


if __name__ == "__main__":
    main()
