"""Fixed twin of overwrite_flag.py: the optimizer is built after the move made the new parameters. One process.
"""

import torch
from torch import nn

from scenario_support import requested_device, train


def main():
    device = requested_device()
    torch.__future__.set_overwrite_module_params_on_conversion(True)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, optimizer, device)


if __name__ == "__main__":
    main()
