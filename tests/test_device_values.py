"""Device values (issue 27, cause 3l): a move of an object to where its own tensors already are moves
nothing; a device read from another object, or unknown, is a move. And summaries per context: a call
that decides a helper's test (`device=None` left out) gets the walk where that test is decided."""
import pytest

from ddp_lint.engine import lint_source
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))


def _codes(body, helper=""):
    source = "import torch\n\n\n" + helper + "def train(model, other, loader, dev):\n" + "".join(
        f"    {line}\n" for line in body)
    found = set()
    for prefilter in (True, False):
        found.add(tuple(sorted(f.code for f in lint_source(source, "t.py", ALL, prefilter=prefilter))))
    assert len(found) == 1, found  # the prefilter changes nothing
    return found.pop()


@pytest.mark.parametrize("device, moves", [
    ("next(model.parameters()).device", False),
    ("next(iter(model.parameters())).device", False),
    ("model.device", False),
    ("next(other.parameters()).device", True),  # another module's place
    ("dev", True),  # unknown
])
def test_a_move_to_where_the_model_is_moves_nothing(device, moves):
    codes = _codes([f"device = {device}", "opt = torch.optim.Adam(model.parameters())", "model.to(device)"])
    assert ("DDP101" in codes) is moves, codes


@pytest.mark.parametrize("line, moves", [
    ("batch = loader.get().to(device)", False),  # a tensor sent there is there
    ("batch = loader.get().to(dev)", True),
])
def test_a_tensor_sent_to_the_models_device_carries_it(line, moves):
    codes = _codes(["device = next(model.parameters()).device", line,
                    "opt = torch.optim.Adam(model.parameters())", "model.to(batch[:, 0].device)"])
    assert ("DDP101" in codes) is moves, codes


def test_a_device_read_before_another_move_is_not_known_to_be_the_current_place():
    # After `model.cuda()`, a device read before names where the model was: never "already there".
    codes = _codes(["device = next(model.parameters()).device", "model.cuda()", "model.to(device)",
                    "opt = torch.optim.Adam(model.parameters())", "model.to(device)"])
    assert "DDP101" not in codes  # the second move goes where the first put it, the place read before: a round trip


HELPER = '''def apply(model, mix, device=None):
    if device is None:
        device = mix.device
    else:
        device = torch.device(device)
    model.to(device)


'''


@pytest.mark.parametrize("call, moves", [
    ("apply(model, batch)", False),  # `device` left None: the helper moves the model to the batch's place
    ("apply(model, batch, None)", False),
    ("apply(model, batch, 'cuda')", True),  # decided the other way: a real move
    ("apply(model, batch, dev)", True),  # undecided: both arms, the device unknown
])
def test_a_call_that_decides_a_helpers_test_gets_the_walk_in_that_context(call, moves):
    codes = _codes(["device = next(model.parameters()).device", "batch = loader.get().to(device)",
                    "opt = torch.optim.Adam(model.parameters())", call], HELPER)
    assert ("DDP101" in codes) is moves, codes
