"""GPU-only scenario DDP002: Adagrad allocates its state on the CPU, then the model moves to CUDA.

The move keeps the parameter objects but not the state: the first step fails with a device
mismatch. Needs a CUDA device (`--device cuda`); one process.
"""

import torch
from torch import nn

from scenario_support import requested_device, train


def main():
    device = requested_device(default="cuda")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
    model.to(device)
    train(model, optimizer, device)


if __name__ == "__main__":
    main()
