"""Scenario DDP001: under `set_overwrite_module_params_on_conversion(True)` even a no-op `.to()` replaces parameters.

The optimizer built before the move keeps the old objects and the model never trains. One process.
"""

import torch
from torch import nn

from scenario_support import requested_device, train


def main():
    device = requested_device()
    torch.__future__.set_overwrite_module_params_on_conversion(True)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.to(device)
    train(model, optimizer, device)


if __name__ == "__main__":
    main()
