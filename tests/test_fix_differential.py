"""Differential execution: generated programs that really train run before and after `--fix`.

The fixed program must raise no error the original did not raise, and wherever the original trained
correctly (no error, the optimizer holds the model's live parameters, state matches them) it must end
with bit-identical parameters. DDP runs at world size 1 over gloo in this process.
"""
import copy
import os
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from ddp_lint.fixer import fix_source  # noqa: E402
from ddp_lint.settings import Selection, Settings  # noqa: E402

ALL = Settings(Selection(select=("ALL",)))
OPTIMIZERS = ["torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)", "torch.optim.Adam(model.parameters(), lr=0.01)",
              "torch.optim.Adagrad(model.parameters(), lr=0.05)", "torch.optim.AdamW(model.parameters(), lr=0.01)"]
PLACEMENTS = ["model.double()", "model = model.to(torch.float64)", "model.to('cpu')", "model = DDP(model)",
              "model = copy.deepcopy(model)", "model.float()", "model.load_state_dict(model.state_dict(), assign=True)"]
OTHER = ["x = torch.ones(2, 4)", "unused = torch.nn.Linear(2, 2).double()", "scale = 1.0"]
DEPENDANTS = ["scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)", "optimizer.load_state_dict(saved)"]

TRAIN = """
for step in range(3):
    dtype = next(model.parameters()).dtype
    inputs = torch.linspace(-1, 1, 8, dtype=dtype).reshape(2, 4)
    loss = model(inputs).pow(2).mean() * scale
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


@st.composite
def programs(draw):
    lines = ["torch.manual_seed(0)", "scale = 1.0", "model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))"]
    lines.append("optimizer = " + draw(st.sampled_from(OPTIMIZERS)))
    lines += draw(st.lists(st.sampled_from(DEPENDANTS), max_size=2, unique=True))
    middle = draw(st.lists(st.sampled_from(PLACEMENTS + OTHER), min_size=1, max_size=3))
    lines += middle
    return "\n".join(lines) + "\n" + TRAIN


def _saved_state():
    torch.manual_seed(1)
    donor = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    opt = torch.optim.SGD(donor.parameters(), lr=0.05, momentum=0.9)
    donor(torch.ones(1, 4)).sum().backward()
    opt.step()
    return opt.state_dict()


def _run(source):
    from torch.nn.parallel import DistributedDataParallel as DDP

    namespace = {"torch": torch, "copy": copy, "DDP": DDP, "saved": copy.deepcopy(SAVED)}
    try:
        exec(compile(source, "<generated>", "exec"), namespace)
    except Exception as exc:  # the program's own failure is the observation
        return type(exc).__name__, None, False
    model = namespace["model"]
    module = getattr(model, "module", model)
    params = [p.detach().clone() for p in module.parameters()]
    optimizer = namespace["optimizer"]
    live = {id(p) for p in module.parameters()}
    held = [p for group in optimizer.param_groups for p in group["params"]]
    correct = all(id(p) in live for p in held) and len(held) == len(live)
    for p in held:
        for value in optimizer.state.get(p, {}).values():
            if torch.is_tensor(value) and value.dim() > 0 and (value.dtype != p.dtype or value.device != p.device):
                correct = False
    return None, params, correct


SAVED = None


@pytest.fixture(scope="module", autouse=True)
def process_group():
    global SAVED
    SAVED = _saved_state()
    if dist.is_initialized():
        yield
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


COUNT = {"programs": 0, "compared": 0}


@settings(max_examples=int(os.environ.get("DDP_LINT_DIFF_EXAMPLES", "40")), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(programs())
def test_fixed_program_raises_nothing_new_and_trains_identically(source):
    fixed = fix_source(source, unsafe=True, settings=ALL).source
    error, params, correct = _run(source)
    fixed_error, fixed_params, fixed_correct = _run(fixed)
    COUNT["programs"] += 1
    if fixed_error is not None:
        assert fixed_error == error, f"fixed program raised {fixed_error}; original raised {error}\n{fixed}"
    if error is None and correct:
        COUNT["compared"] += 1
        assert fixed_error is None
        assert all(torch.equal(a, b) for a, b in zip(params, fixed_params)), fixed


def test_the_differential_run_really_compared_programs():
    # Runs after the property test in file order: make sure it exercised the comparison path.
    print(COUNT)
    assert COUNT["programs"] >= 30 and COUNT["compared"] >= 10, COUNT
