"""Tuples keep their positions (issue 27, cause 1a/1e): a helper's returned tuple and a zip's items."""
import textwrap

import pytest

from ddp_lint.engine import lint_source
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))


def _found(source):
    return [(f.line, f.code, f.message.split(" is built")[0]) for f in lint_source(textwrap.dedent(source), "t.py", ALL)]


def test_the_holder_is_the_position_the_helper_returns_it_at():
    found = _found("""
        import torch

        def state(model):
            opt = torch.optim.AdamW(model.parameters())
            return torch.optim.lr_scheduler.StepLR(opt, 1), opt

        def main(model, device):
            sched, optimizer = state(model)
            model.to(device)
    """)
    assert [(line, code) for line, code, _ in found] == [(9, "DDP101")]
    assert "`optimizer`" in found[0][2] and "`sched`" not in found[0][2]


def test_a_returned_tuple_of_another_model_holds_nothing_here():
    assert _found("""
        import torch
        from torch import nn

        def state(model):
            probe = nn.Linear(2, 2)
            return torch.optim.AdamW(probe.parameters()), model

        def main(model, device):
            opt, model = state(model)
            model.to(device)
    """) == []


def test_the_model_handed_back_in_the_tuple_is_the_callers():
    found = _found("""
        import torch

        def state(model):
            return model, torch.optim.AdamW(model.parameters())

        def main(net, device):
            model, opt = state(net)
            model.to(device)
    """)
    assert [(line, code) for line, code, _ in found] == [(8, "DDP101")]


@pytest.mark.parametrize("loop, reported", [
    ("for block, lr in zip(net.blocks, lrs):", True),
    ("for i, (block, lr) in enumerate(zip(net.blocks, lrs), start=1):", True),
    ("for lr, block in zip(lrs, other.blocks):", False),  # another net's blocks: this move is not theirs
    ("for lr, block in zip(net.blocks, lrs):", False),  # the positions swapped: `block` is a learning rate
])
def test_zip_items_keep_their_sources(loop, reported):
    found = _found(f"""
        import torch

        def main(net, other, lrs, device):
            opts = []
            {loop}
                opts.append(torch.optim.SGD(block.parameters(), lr=lr))
            net.to(device)
    """)
    assert bool(found) is reported, found


@pytest.mark.parametrize("call, reported", [
    ('PLACERS["gpu"](net)', True),
    ('PLACERS["cpu"](net)', False),  # the constant key picks the class that places nothing
    ("PLACERS[name](net)", True),  # any of them
    ("SINGLE(net)", True),  # a module-level name for one class
])
def test_classes_are_values_picked_from_registries(call, reported):
    found = _found(f"""
        import torch

        class GpuPlacer:
            def __init__(self, net):
                self.net = net.cuda()

        class CpuPlacer:
            def __init__(self, net):
                self.net = net

        PLACERS = {{"gpu": GpuPlacer, "cpu": CpuPlacer}}
        SINGLE = GpuPlacer

        def main(net, name):
            optimizer = torch.optim.Adam(net.parameters())
            return {call}, optimizer
    """)
    assert bool(found) is reported, found


def test_a_class_of_this_file_named_as_an_optimizer_is_one():
    found = _found("""
        import torch

        class QAdamOptimizer(torch.optim.Optimizer):
            def __init__(self, params, lr):
                super().__init__(params, dict(lr=lr))

        def main(model):
            optimizer = QAdamOptimizer(model.parameters(), 0.1)
            model.cuda()
    """)
    assert [(line, code) for line, code, _ in found] == [(9, "DDP101")]


@pytest.mark.parametrize("second, reported", [
    ("metric = LearnedMetric()", True),  # built here, never moved: its move is its first
    ("metric = convert(model)", False),  # what a call on the moved model returns may be there already
])
def test_already_there_asks_of_the_object_when_it_was_built_here(second, reported):
    found = _found(f"""
        import torch
        from torch import nn

        class LearnedMetric(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

        def main(model, device, convert):
            model.to(device)
            {second}
            optimizer = torch.optim.Adam(list(model.parameters()) + list(metric.parameters()))
            metric.to(device)
    """)
    assert bool(found) is reported, found


@pytest.mark.parametrize("registration, reported", [
    ("@trainer.on(Events.STARTED)\n    def place(engine):\n        model.to(device)\n", True),
    ("def place(engine):\n        model.to(device)\n\n    trainer.add_event_handler(Events.STARTED, place)\n", True),
    ("def place(engine):\n        model.to(device)\n", False),  # never registered: never runs
])
def test_a_registered_handler_runs_when_its_object_runs(registration, reported):
    source = (
        "import torch\nfrom ignite.engine import Engine, Events\n\n\ndef main(model, loader, device):\n"
        "    trainer = Engine(lambda e, b: 0.0)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        f"    {registration}"
        "    trainer.run(loader)\n    return optimizer\n"
    )
    found = [(f.code, f.fix) for f in lint_source(source, "t.py", ALL)]
    assert bool(found) is reported, found
    assert all(fix is None or not fix.available for _, fix in found)  # no automatic fix: it runs later
