"""Fixed twin of deepcopy.py: the optimizer is built on the copy that the loop trains. One process.
"""
import copy

import torch
from torch import nn

from scenario_support import requested_device, train


def main():
    device = requested_device()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    model = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, optimizer, device)


if __name__ == "__main__":
    main()
