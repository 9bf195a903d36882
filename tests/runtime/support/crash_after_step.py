"""Support script: trains correctly, then fails in its own code after the second step."""
import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1, 5):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()
    print(f"step {step}", flush=True)
    if step == 2:
        raise ValueError("data loader ran dry")
