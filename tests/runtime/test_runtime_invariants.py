"""The invariant checks on hand-built optimizers and models, in-process (no launcher, no torchrun)."""
from __future__ import annotations

import copy
import types

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from ddp_lint.runtime import invariants as inv  # noqa: E402
from ddp_lint.runtime.fingerprint import bit_hash, fingerprint, float_sum  # noqa: E402


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def _backward(model: nn.Module, dtype: torch.dtype = torch.float32) -> None:
    x = torch.randn(8, 4, dtype=dtype)
    model(x).pow(2).mean().backward()


def test_meta_params_are_the_ones_left_on_meta() -> None:
    with torch.device("meta"):
        model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.to_empty(device="cpu")
    assert len(inv.meta_params(inv.optimizer_params(opt))) == 4
    assert inv.meta_params(model.parameters()) == []


def test_stale_params_after_deepcopy_and_no_gradients_reach_them() -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model = copy.deepcopy(model)
    _backward(model)
    live = {id(p) for p in model.parameters()}
    params = inv.optimizer_params(opt)
    assert len(inv.stale_params(params, live)) == 4
    assert inv.with_grad(params) == []
    assert len(inv.with_grad(model.parameters())) == 4


def test_orphan_grads_after_weight_norm() -> None:
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    nn.utils.parametrizations.weight_norm(model[2])
    _backward(model)
    owned = {id(p) for p in inv.optimizer_params(opt)}
    orphans = [name for name, _ in inv.orphan_grads(list(model.named_parameters()), owned)]
    assert orphans == ["2.parametrizations.weight.original0", "2.parametrizations.weight.original1"]


def test_state_dtype_mismatch_after_cast_of_adagrad() -> None:
    model = _model()
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    model.double()
    found = inv.state_mismatches(opt)
    assert {m.kind for m in found} == {"dtype"}
    assert (found[0].key, found[0].state_value, found[0].param_value) == ("sum", "float32", "float64")


def test_state_device_mismatch_is_seen_before_dtype() -> None:
    param = nn.Parameter(torch.zeros(3))
    opt = torch.optim.SGD([param], lr=0.1, momentum=0.9)
    opt.state[param]["momentum_buffer"] = torch.zeros(3, device="meta", dtype=torch.float64)
    [found] = inv.state_mismatches(opt)
    assert (found.kind, found.state_value, found.param_value) == ("device", "meta", "cpu")


def test_state_shape_mismatch_and_scalar_steps_ignored() -> None:
    param = nn.Parameter(torch.zeros(29))
    opt = torch.optim.Adagrad([param], lr=0.1)
    opt.state[param]["sum"] = torch.zeros(8, 4)
    opt.state[param]["step"] = torch.tensor(3.0, dtype=torch.float64)  # 0-dim: may differ by design
    [found] = inv.state_mismatches(opt)
    assert (found.kind, found.state_value, found.param_value) == ("shape", "[8, 4]", "[29]")


def test_matching_state_is_clean() -> None:
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    _backward(model)
    opt.step()
    assert inv.state_mismatches(opt) == []
    assert all(inv.has_state(opt, p) for p in model.parameters())


def test_zero_device_mismatch_names_the_frozen_default() -> None:
    zero = types.SimpleNamespace(_default_device=torch.device("cpu"),
                                 param_groups=[{"params": [torch.empty(2, device="meta")]}])
    assert inv.zero_device_mismatch(zero) == ("cpu", "meta")
    zero.param_groups[0]["params"] = [torch.empty(2)]
    assert inv.zero_device_mismatch(zero) is None


def test_zero_unaliased_params_have_storage_outside_every_bucket() -> None:
    bucket = torch.zeros(6)
    inside = nn.Parameter(torch.empty(0))
    inside.data = bucket[0:4].view(2, 2)
    outside = nn.Parameter(torch.zeros(2))
    zero = types.SimpleNamespace(parameters_as_bucket_view=True, _overlap_with_ddp=False, _buckets=[[bucket]],
                                 param_groups=[{"params": [inside, outside]}])
    assert inv.zero_unaliased(zero) == [outside]
    zero.parameters_as_bucket_view = False
    assert inv.zero_unaliased(zero) == []


def test_learning_rate_and_gradient_guards_of_the_no_effect_check() -> None:
    param = nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([param], lr=0.0)
    assert not inv.all_lr_positive(opt)
    opt.param_groups[0]["lr"] = torch.tensor(0.1)
    assert inv.all_lr_positive(opt)
    param.grad = torch.zeros(2)
    assert not inv.any_nonzero_grad([param])
    param.grad[1] = 1e-3
    assert inv.any_nonzero_grad([param])


def test_fingerprints_tell_equal_from_changed_tensors() -> None:
    a = torch.arange(6, dtype=torch.float32)
    b = a.clone()
    assert bit_hash(a) == bit_hash(b) and float_sum(a) == 15.0
    b[5] = torch.nextafter(b[5], torch.tensor(10.0))  # one ulp: invisible to a rounded sum
    assert bit_hash(a) != bit_hash(b)
    assert bit_hash(a.flip(0)) != bit_hash(a)  # a permutation changes the hash
    fp = fingerprint([a, torch.empty(0)])
    assert fp["hashes"][1] is None and fp["sum"] == 15.0
