"""Fixed twin of weight_norm.py: the optimizer is built after `weight_norm`, so it holds the new parameters.

One process.
"""
from collections import OrderedDict

import torch
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from scenario_support import requested_device, train


def main():
    device = requested_device()

    torch.manual_seed(0)
    model = nn.Sequential(OrderedDict(hidden=nn.Linear(4, 8), act=nn.ReLU(), head=nn.Linear(8, 2))).to(device)
    weight_norm(model.head)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    train(model, optimizer, device)


if __name__ == "__main__":
    main()
