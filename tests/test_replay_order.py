"""A callee's steps and moves replay in its own order, and a move to where an earlier move after the
optimizer already put the model is a round trip (brevitas' `train_for_epoch` then `evaluate`)."""
import pytest

from ddp_lint.engine import lint_source
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))

HELPERS = '''import torch

DEVICE = "cuda"


def train_epoch(model, loader, optimizer):
    model = model.to(DEVICE)
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def evaluate(model, loader):
    model = model.to(DEVICE)
    return sum(float(model(x).sum()) for x, _ in loader)


def evaluate_on(model, loader, where):
    model = model.to(where)
    return sum(float(model(x).sum()) for x, _ in loader)


def main(model, loader, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(epochs):
        train_epoch(model, loader, optimizer)
        {evaluate}
'''


@pytest.mark.parametrize("evaluate, codes", [
    # the move inside train_epoch comes before its step: the callee's side reports the fragile order
    # (DDP101 at its move); evaluate moves to the same place again: no state-before-move anywhere
    ("evaluate(model, loader)", {("DDP101", 7)}),
    # evaluate moves the model somewhere else after train_epoch stepped: state before a real move
    ("evaluate_on(model, loader, 'cuda:1')", {("DDP101", 7), ("DDP002", 25)}),
])
def test_steps_and_moves_of_a_callee_replay_in_its_order(evaluate, codes):
    source = HELPERS.format(evaluate=evaluate)
    for prefilter in (True, False):
        found = {(f.code, f.line) for f in lint_source(source, "t.py", ALL, prefilter=prefilter)
                 if f.code in ("DDP101", "DDP002")}
        assert found == codes, (prefilter, found)
