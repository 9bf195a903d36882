"""The monitor installed in this process: what it reports, what it leaves alone, and that it uninstalls cleanly."""
from __future__ import annotations

import copy
import os
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402

from ddp_lint.runtime.config import MonitorConfig  # noqa: E402
from ddp_lint.runtime.monitor import Monitor, StepLimitReached  # noqa: E402
from ddp_lint.runtime.patching import Patcher  # noqa: E402

HERE = os.path.abspath(__file__)


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def _train(model: nn.Module, opt: torch.optim.Optimizer, steps: int = 3, dtype: torch.dtype = torch.float32) -> None:
    for step in range(steps):
        g = torch.Generator().manual_seed(step)
        x, y = torch.randn(8, 4, generator=g, dtype=dtype), torch.randn(8, 2, generator=g, dtype=dtype)
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()


def _codes(monitor: Monitor) -> list:
    return sorted({f.code for f in monitor.findings})


def _line_of(text: str) -> int:
    with open(HERE, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if text in line and "_line_of" not in line:
                return number
    raise AssertionError(text)


@pytest.fixture
def monitor():
    with Monitor(MonitorConfig(check_every=5)) as installed:
        yield installed


def test_stale_optimizer_after_to_empty_points_at_both_lines(monitor: Monitor) -> None:
    with torch.device("meta"):
        model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # marker: meta optimizer
    model.to_empty(device="cpu")  # marker: to_empty
    _train(model, opt)
    [finding] = monitor.findings[:1]
    assert finding.code == "DDP001" and finding.severity == "error"
    assert (finding.path, finding.line) == (HERE, _line_of("marker: meta optimizer"))
    assert [(r.line, r.note) for r in finding.related] == [
        (_line_of("marker: to_empty"), ".to_empty() replaced 4 parameters here")]
    assert _codes(monitor) == ["DDP001"]


def test_deepcopy_is_caught_at_the_first_step_without_a_related_line(monitor: Monitor) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model = copy.deepcopy(model)
    _train(model, opt)
    [finding] = monitor.findings
    assert finding.code == "DDP001" and finding.step == 1 and finding.related == []
    assert "none of the 4 parameters" in finding.message


def test_weight_norm_partial_coverage_names_the_parameters(monitor: Monitor) -> None:
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    nn.utils.parametrizations.weight_norm(model[2])
    _train(model, opt)
    [finding] = monitor.findings
    assert finding.code == "DDP001"
    assert "(2.weight)" in finding.message and "2.parametrizations.weight.original0" in finding.message


def test_reassigned_head_is_partial_coverage(monitor: Monitor) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model[2] = nn.Linear(8, 2)
    _train(model, opt)
    assert _codes(monitor) == ["DDP001"]
    assert "2 model parameters with gradients (2.weight, 2.bias)" in monitor.findings[0].message


def test_overwrite_flag_replacement_is_reported_at_the_conversion(monitor: Monitor) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    try:
        model.to("cpu")
    finally:
        torch.__future__.set_overwrite_module_params_on_conversion(False)
    assert _codes(monitor) == ["DDP001"] and monitor.findings[0].step is None  # before any step
    assert not any(p is q for p in opt.param_groups[0]["params"] for q in model.parameters())


def test_adagrad_state_and_cast_is_reported_immediately_and_at_the_step(monitor: Monitor) -> None:
    model = _model()
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    model.double()
    assert _codes(monitor) == ["DDP002"]
    assert "built in its constructor" in monitor.findings[0].message
    _train(model, opt, dtype=torch.float64)  # Adagrad mixes precisions silently
    assert [f.step for f in monitor.findings] == [None, 1]
    assert "state 'sum' on float32 while its parameter is on float64" in monitor.findings[1].message


def test_loaded_state_then_cast_names_the_load_line(monitor: Monitor) -> None:
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    _train(model, opt, steps=1)
    checkpoint = opt.state_dict()
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    opt.load_state_dict(checkpoint)  # marker: load
    model.half()
    finding = monitor.findings[-1]
    assert finding.code == "DDP002" and f"loaded on line {_line_of('marker: load')}" in finding.message
    with pytest.raises(RuntimeError):
        _train(model, opt, steps=1, dtype=torch.float16)


def test_correct_training_reports_nothing(monitor: Monitor) -> None:
    # Canonical order, a frozen layer, two optimizers, gradient accumulation, an eval forward and
    # a stateless optimizer before a harmless cast: none of it is a finding.
    model = _model()
    model[0].weight.requires_grad_(False)
    model.double()
    head_opt = torch.optim.Adam(model[2].parameters(), lr=0.1)
    body_opt = torch.optim.SGD([model[0].bias], lr=0.1, momentum=0.9)
    for step in range(7):
        for micro in range(2):
            x = torch.randn(4, 4, dtype=torch.float64)
            model(x).pow(2).mean().backward()
        head_opt.step()
        body_opt.step()
        head_opt.zero_grad()
        body_opt.zero_grad()
        with torch.no_grad():
            model(torch.randn(2, 4, dtype=torch.float64))
    fragile = _model()
    sgd = torch.optim.SGD(fragile.parameters(), lr=0.1)
    fragile.double()
    _train(fragile, sgd, dtype=torch.float64)
    assert monitor.findings == []


def test_step_that_changes_nothing_is_reported_after_two_checked_steps(monitor: Monitor) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    # A pre-hook that undoes every update: gradients flow, lr > 0, nothing changes.
    saved = {}
    opt.register_step_pre_hook(lambda o, a, k: saved.update({id(p): p.detach().clone() for p in model.parameters()}))
    opt.register_step_post_hook(lambda o, a, k: [p.data.copy_(saved[id(p)]) for p in model.parameters()])
    _train(model, opt, steps=3)
    [finding] = monitor.findings
    assert finding.code == "DDP001" and "none of its parameters changed" in finding.message and finding.step == 2


def test_forward_hooks_are_only_installed_before_check_steps(monitor: Monitor) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    later_phase = torch.optim.Adam(model[2].parameters(), lr=0.1)  # not stepped yet: keeps nothing open
    open_after = []
    for step in range(1, 11):
        _train(model, opt, steps=1)
        open_after.append(bool(monitor._forward_hooks))
    # checks at steps 1, 2, 3, 5, 10 (check_every=5): the window opens after the step before each
    assert open_after == [True, True, False, True, False, False, False, False, True, False]
    assert monitor.registry.optimizer(later_phase).steps == 0


def test_replacement_between_check_steps_is_caught_by_the_per_step_probe(monitor: Monitor) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    _train(model, opt, steps=6)  # past the warm-up checks; the next scheduled check is step 10
    model = copy.deepcopy(model)  # unseen by any wrapped API
    _train(model, opt, steps=2)
    [finding] = monitor.findings
    assert finding.code == "DDP001" and finding.step == 8  # probe at step 7, diagnosis at step 8


def test_max_steps_stops_the_loop(monitor: Monitor) -> None:
    monitor.config.max_steps = 2
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(StepLimitReached):
        _train(model, opt, steps=5)
    assert monitor.registry.optimizer(opt).steps == 2


def test_uninstall_restores_every_patched_attribute() -> None:
    from torch.optim import Optimizer

    originals = (Optimizer.__init__, Optimizer.load_state_dict, nn.Module._apply, nn.Module.load_state_dict,
                 torch.autograd.backward)
    with Monitor():
        assert Optimizer.__init__ is not originals[0] and nn.Module._apply is not originals[2]
    assert (Optimizer.__init__, Optimizer.load_state_dict, nn.Module._apply, nn.Module.load_state_dict,
            torch.autograd.backward) == originals
    from torch.optim.optimizer import _global_optimizer_post_hooks, _global_optimizer_pre_hooks
    from torch.nn.modules.module import _global_forward_pre_hooks

    assert not _global_optimizer_pre_hooks and not _global_optimizer_post_hooks and not _global_forward_pre_hooks


def test_patcher_patches_a_module_when_it_is_imported_and_restores_it(tmp_path, monkeypatch) -> None:
    (tmp_path / "ddp_lint_fake_wrappers.py").write_text(textwrap.dedent("""
        def wrap(x):
            return x + 1
    """))
    (tmp_path / "ddp_lint_fake_reexport.py").write_text("from ddp_lint_fake_wrappers import wrap\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    patcher = Patcher()
    patcher.when_imported("ddp_lint_fake_wrappers", lambda m: patcher.replace_function(
        m, "wrap", lambda original: (lambda x: original(x) * 10), ("ddp_lint_fake_reexport",)))
    try:
        from ddp_lint_fake_reexport import wrap  # the re-export binds the patched function

        assert wrap(1) == 20
    finally:
        patcher.restore_all()
    assert sys.modules["ddp_lint_fake_wrappers"].wrap(1) == 2
    assert sys.modules["ddp_lint_fake_reexport"].wrap(1) == 2
    for name in ("ddp_lint_fake_wrappers", "ddp_lint_fake_reexport"):
        sys.modules.pop(name, None)


@pytest.fixture
def single_rank_group():
    if not dist.is_available():
        pytest.skip("torch.distributed unavailable")
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_backend_option_overrides_the_scripts_choice() -> None:
    # `--backend gloo` lets a script written for NCCL run on a CPU machine.
    with Monitor(MonitorConfig(backend="gloo")):
        dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
        try:
            assert dist.get_backend() == "gloo"
        finally:
            dist.destroy_process_group()


def test_ddp_then_cast_is_reported_on_the_conversion(monitor: Monitor, single_rank_group) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = _model()
    ddp = DDP(model)  # marker: ddp wrap
    model.double()  # marker: cast after wrap
    [finding] = monitor.findings
    assert finding.code == "DDP003" and finding.line == _line_of("marker: cast after wrap")
    assert finding.related[0].line == _line_of("marker: ddp wrap")
    del ddp


def test_discarded_ddp_wrapper_is_reported_at_the_first_step(monitor: Monitor, single_rank_group) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = _model()
    DDP(model)  # marker: discarded
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    _train(model, opt)
    [finding] = monitor.findings
    assert finding.code == "DDP004" and finding.line == _line_of("marker: discarded") and finding.step == 1


def test_training_through_ddp_reports_nothing(monitor: Monitor, single_rank_group) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = _model()
    ddp = DDP(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=0.1)
    _train(ddp, opt, steps=4)
    with torch.no_grad():
        model(torch.randn(2, 4))  # evaluating the bare module between steps is fine
    _train(ddp, opt, steps=2)
    assert monitor.findings == []


class _Blocks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(4))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def test_fully_shard_on_each_block_then_the_model_counts_every_replaced_parameter(
        monitor: Monitor, single_rank_group) -> None:
    # It said "holds 2 parameters (blocks.0.weight, blocks.0.bias)": the first block's replacement only.
    from ddp_lint.runtime.findings import merge_findings
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (1,))
    torch.manual_seed(0)
    model = _Blocks()
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)  # marker: sharded optimizer
    for block in model.blocks:
        fully_shard(block, mesh=mesh)  # marker: shard blocks
    fully_shard(model, mesh=mesh)
    [finding] = [f for f in merge_findings(monitor.findings) if f.step is None]
    assert finding.code == "DDP001" and finding.line == _line_of("marker: sharded optimizer")
    assert finding.message.startswith(
        "AdamW built here holds 8 parameters (blocks.0.weight, blocks.0.bias, blocks.1.weight, blocks.1.bias, ... "
        f"4 more), all of which fully_shard() on line {_line_of('marker: shard blocks')} replaced with new objects"), \
        finding.message
    assert not any("holds 2 parameters" in text for text in finding.evidence), finding.evidence
    # One call in a loop, four runs: one related line that counts them all.
    assert [(r.line, r.note) for r in finding.related] == [
        (_line_of("marker: shard blocks"), "fully_shard() replaced 8 parameters here")]
    del opt
