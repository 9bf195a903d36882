"""Fixed twin of cuda_move_with_state.py: the model moves first, Adagrad allocates its state on CUDA.
"""

import torch
from torch import nn

from scenario_support import requested_device, train


def main():
    device = requested_device(default="cuda")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model.to(device)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
    train(model, optimizer, device)


if __name__ == "__main__":
    main()
