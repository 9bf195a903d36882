"""Fixed twin of adagrad_cast.py: the model is cast before Adagrad allocates its state. One process.
"""

import torch
from torch import nn

from scenario_support import requested_device, train


def main():
    device = requested_device()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    model.double()
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
    train(model, optimizer, device, dtype=torch.float64)


if __name__ == "__main__":
    main()
