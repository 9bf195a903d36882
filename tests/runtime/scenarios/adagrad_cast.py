"""Scenario DDP002: Adagrad, which allocates its state in the constructor, is built before a float64 cast.

Its `sum` state stays float32 while the parameters become float64: the steps silently mix
precisions (Adam-family optimizers would crash instead). One process.
"""

import torch
from torch import nn

from scenario_support import requested_device, train


def main():
    device = requested_device()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
    model.double()
    train(model, optimizer, device, dtype=torch.float64)


if __name__ == "__main__":
    main()
