"""Differential execution: generated programs that really train run before and after `--fix`.

What "safe" promises (README, "Fix safety"), checked by running: a program fixed with the safe fixes
alone raises no error the original did not raise, and wherever the original trained correctly (no
error, the optimizer holds the model's live parameters, state matches them) it ends with
bit-identical parameters. With `--unsafe-fixes` too, any new error must come from a fix labelled
unsafe. Between the optimizer and its placement the generator puts what broke fixes once labelled
safe: calls of functions and closures that read the optimizer, list mutations, `locals()`/`globals()`,
reads of the optimizer, checkpoint loads before an FSDP1 wrap, and statements that add, remove or
replace the model's parameters (`add_module`, `register_parameter`, `setattr`, `del`, a
parametrization, a helper that grows the model, `requires_grad_` under a filtered optimizer): a safe
fix must leave the optimizer holding the same parameters, by count and by name. DDP and FSDP run at world size 1
over gloo in this process.

`DDP_LINT_DIFF_EXAMPLES=10000 pytest tests/test_fix_differential.py -s` is the soak mode (outside CI).
"""
import copy
import os
import socket
import difflib
import textwrap
import traceback
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from ddp_lint.fixer.apply import fix_source  # noqa: E402
from ddp_lint.settings import Selection, Settings  # noqa: E402

# runs 200 generated programs before and after their fixes
pytestmark = pytest.mark.slow

ALL = Settings(Selection(select=("ALL",)))
EXAMPLES = int(os.environ.get("DDP_LINT_DIFF_EXAMPLES", "200"))
OPTIMIZERS = ["torch.optim.SGD({p}, lr=0.05, momentum=0.9)", "torch.optim.Adam({p}, lr=0.01)",
              "torch.optim.Adagrad({p}, lr=0.05)", "torch.optim.AdamW({p}, lr=0.01)"]
PLACEMENTS = ["model.double()", "model = model.to(torch.float64)", "model.to('cpu')", "model = DDP(model)",
              "model = copy.deepcopy(model)", "model.float()", "model.load_state_dict(model.state_dict(), assign=True)",
              "model = FSDP(model, device_id=torch.device('cpu'))"]
OTHER = ["x = torch.ones(2, 4)", "unused = torch.nn.Linear(2, 2).double()", "scale = 1.0"]
# What lies between the optimizer and the placement in real code, including what once broke a safe fix.
BETWEEN = [
    "def describe():\n    return type(optimizer).__name__\nlabel = describe()",  # a function (or closure) reads it
    "def count():\n    return len(params)\nn_params = count()",  # reads only what the optimizer reads
    "def reset():\n    params.clear()\nreset()",
    "show = lambda: repr(optimizer)\nshown = show()",
    "params.clear()",
    "params.reverse()",
    "params.append(torch.nn.Parameter(torch.zeros(1)))",
    "dropped = params.pop()",
    "for group in [params]:\n    group.pop()",
    "seen = len(locals()['optimizer'].param_groups)",
    "found = globals().get('optimizer')",
    "text = repr(optimizer)",
    "shuffle(params)",
    "print_count = len(list(model.parameters()))",
    # What changes the optimizer's parameter set when it is built later (a "safe" fix once did that).
    "model.add_module('extra', torch.nn.Linear(1, 1))",
    "model.register_parameter('extra_scale', torch.nn.Parameter(torch.ones(1)))",
    "setattr(model, 'extra', torch.nn.Linear(1, 1))",
    "model.extra_scale = torch.nn.Parameter(torch.ones(1))",
    "model.append(torch.nn.Linear(1, 1))",
    "del model[2]",
    "model[0].requires_grad_(False)",
    "torch.nn.utils.parametrize.register_parametrization(model[0], 'weight', torch.nn.Identity())",
    "def grow(m):\n    m.add_module('extra', torch.nn.Linear(1, 1))\ngrow(model)",
    "for layer in model.modules():\n    layer.register_parameter('extra_bias', torch.nn.Parameter(torch.zeros(1)))",
]
DEPENDANTS = ["scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)",
              "optimizer.load_state_dict(saved)"]

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
    lines = ["torch.manual_seed(0)", "scale = 1.0",
             "model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))",
             "params = list(model.parameters())"]
    source = draw(st.sampled_from(["model.parameters()", "params",
                                   "[p for p in model.parameters() if p.requires_grad]"]))
    lines.append("optimizer = " + draw(st.sampled_from(OPTIMIZERS)).format(p=source))
    lines += draw(st.lists(st.sampled_from(DEPENDANTS), max_size=2, unique=True))
    lines += draw(st.lists(st.sampled_from(PLACEMENTS + OTHER + BETWEEN), min_size=1, max_size=4))
    body = "\n".join(lines) + "\n" + TRAIN
    if draw(st.booleans()):
        # Inside a function: the helpers above become closures, `locals()` is the function's.
        body = "def main():\n" + textwrap.indent(body + "return model, optimizer\n", "    ") + \
            "model, optimizer = main()\n"
    return body


def _saved_state():
    torch.manual_seed(1)
    donor = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    opt = torch.optim.SGD(donor.parameters(), lr=0.05, momentum=0.9)
    donor(torch.ones(1, 4)).sum().backward()
    opt.step()
    return opt.state_dict()


def _run(source):
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.nn.parallel import DistributedDataParallel as DDP

    import random

    namespace = {"torch": torch, "copy": copy, "DDP": DDP, "FSDP": FSDP, "saved": copy.deepcopy(SAVED),
                 "shuffle": random.Random(0).shuffle}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(source, "<generated>", "exec"), namespace)
    except Exception as exc:  # the program's own failure is the observation, and where it happened
        where = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == "<generated>"]
        line = source.splitlines()[where[-1] - 1].strip() if where else ""
        return (type(exc).__name__, line), None, False, None
    model = namespace["model"]
    module = model if isinstance(model, FSDP) else getattr(model, "module", model)
    params = [p.detach().clone() for p in module.parameters()]
    optimizer = namespace["optimizer"]
    live = {id(p) for p in module.parameters()}
    held = [p for group in optimizer.param_groups for p in group["params"]]
    correct = all(id(p) in live for p in held) and len(held) == len(live)
    for p in held:
        for value in optimizer.state.get(p, {}).values():
            if torch.is_tensor(value) and value.dim() > 0 and (value.dtype != p.dtype or value.device != p.device):
                correct = False
    # What the optimizer holds: how many tensors, and, when all are the model's own, which by name.
    names = {id(p): name for name, p in module.named_parameters()}
    holds = (len(held), tuple(sorted(names[id(p)] for p in held)) if all(id(p) in names for p in held) else None)
    return None, params, correct, holds


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


COUNT = {"programs": 0, "safe_fixed": 0, "compared": 0, "holds_compared": 0, "unsafe_only": 0, "unsafe_new_error": 0}


def _moved_lines(before, after):
    """The lines of `before` that the fix moved (stripped, as errors are located)."""
    old, new = before.splitlines(), after.splitlines()
    moved = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag in ("delete", "replace"):
            moved.update(line.strip() for line in old[i1:i2])
    return moved


def _same(a, b):
    return len(a) == len(b) and all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, b))


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(programs())
def test_safe_fixes_keep_behaviour_and_new_errors_come_only_from_unsafe_ones(source):
    safe = fix_source(source, unsafe=False, settings=ALL).source
    unsafe = fix_source(source, unsafe=True, settings=ALL).source
    COUNT["programs"] += 1
    error, params, correct, holds = _run(source)
    if safe != source:
        COUNT["safe_fixed"] += 1
        safe_error, safe_params, _, safe_holds = _run(safe)
        if error is None and safe_error is None and "FSDP" not in source:  # FSDP1 flattens what it holds
            COUNT["holds_compared"] += 1
            assert holds[0] == safe_holds[0] and (holds[1] is None or holds[1] == safe_holds[1]), \
                f"a safe fix changed what the optimizer holds: {holds} -> {safe_holds}\n{source}\n---\n{safe}"
        if safe_error is not None:
            assert error is not None, f"a safe fix raised {safe_error}; the original ran\n{source}\n---\n{safe}"
            if error[1] not in _moved_lines(source, safe):
                # A moved statement that fails may now fail after another failure; anything else fails alike.
                assert safe_error[0] == error[0], f"a safe fix raised {safe_error}; the original {error}\n{source}\n---\n{safe}"
        if error is None and correct:
            COUNT["compared"] += 1
            assert _same(params, safe_params), f"a safe fix changed what the program trains\n{source}\n---\n{safe}"
    if unsafe != safe:
        COUNT["unsafe_only"] += 1
        unsafe_error, _, _, _ = _run(unsafe)
        if unsafe_error is not None and (error is None or unsafe_error[0] != error[0]):
            COUNT["unsafe_new_error"] += 1  # allowed: that is what the label says


def test_the_differential_run_really_compared_programs():
    # Runs after the property test in file order: it must have exercised every path it claims to.
    print(COUNT)
    assert COUNT["programs"] >= min(EXAMPLES, 200) * 0.9, COUNT
    assert COUNT["safe_fixed"] >= COUNT["programs"] // 10 and COUNT["compared"] >= 10, COUNT
    assert COUNT["holds_compared"] >= 10, COUNT
    assert COUNT["unsafe_only"] >= 1, COUNT
