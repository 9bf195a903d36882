"""Scenario DDP001: `weight_norm` re-parametrises the head after the optimizer was built.

The head's `weight` is replaced by `original0`/`original1`, which no optimizer holds: the head's
weight never trains while the rest of the model does. One process.
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
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    weight_norm(model.head)
    train(model, optimizer, device)


if __name__ == "__main__":
    main()
