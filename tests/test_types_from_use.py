"""Types from use (issue 27, cause 2a): what makes a parameter of any name an optimizer, and what
does not (a scheduler handed to a scheduling helper, an annotation that says otherwise)."""
import pytest

from ddp_lint.engine import lint_source
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))


@pytest.mark.parametrize("signature, body, reported", [
    ("net, updater, device", ["updater.zero_grad()", "updater.step()"], True),
    ("net, updater, device", ["scaler.step(updater)"], True),
    ("net, updater, device", ["updater.param_groups[0]['lr'] = 0.1"], True),
    ("net, updater, device", ["updater.add_param_group({'params': []})"], False),  # it regroups: it owns the order
    ("net, env, device", ["env.step(0)"], False),  # a gym environment steps
    ("net, sched, device", ["sched.step()", "step_scheduler(sched)"], False),  # handed to a scheduling helper
    ("net, updater: 'Lazy[Optimizer]', device", ["updater.zero_grad()", "updater.step()"], False),  # annotated
])
def test_a_parameter_used_only_as_an_optimizer_is_one(signature, body, reported):
    lines = ["import torch", "", "", f"def train(scaler, {signature}):", "    net.to(device)"]
    source = "\n".join(lines + ["    " + line for line in body]) + "\n"
    for prefilter in (True, False):  # the prefilter lets through what the engine reports
        codes = [f.code for f in lint_source(source, "t.py", ALL, prefilter=prefilter)]
        assert ("DDP101" in codes) is reported, (prefilter, codes)


@pytest.mark.parametrize("name, annotation, module", [
    ("model", "WideDeep", True),  # a project class: the name decides
    ("model", "nn.Module", True),
    ("model", "str", False),  # a builtin type says it is no module
    ("model", "Optional[Dict[str, Any]]", False),
    ("config", "Config", False),  # a class, but the name does not say model
])
def test_a_parameter_named_as_the_model_with_a_plain_class_annotation_is_a_module(name, annotation, module):
    from ddp_lint import catalog as cat

    assert cat.receives_model(name, annotation) is module


@pytest.mark.parametrize("text, used", [
    ("scaler.step(optimizer)", True),
    ("amp_scaler.step(opt)", True),
    ("example.step()", False),  # no argument: an environment's or a scheduler's step
    ("for sample in data:\n    env.step(action)", False),  # `amp` in `sample` names no receiver
])
def test_the_text_stage_reads_a_scalers_step_by_its_receiver(text, used):
    from ddp_lint.prefilter import _used_as_optimizer

    assert _used_as_optimizer(text) is used


@pytest.mark.parametrize("build, use, reported", [
    ("OPTIMS[name](net.parameters(), lr=0.1)", "fit(net, optimizer=opt)", True),  # handed on as `optimizer=`
    ("OPTIMS[name](net.parameters())", "opt.zero_grad(); opt.step()", True),  # uses only an optimizer has
    ("optims.__dict__[name](params)", "opt.param_groups[0]['lr'] = 0.1", True),  # a name for parameters
    ("OPTIMS[name](net.parameters())", "opt.step()", False),  # a step() alone: a scheduler's, a clipper's
    ("OPTIMS[name](net.parameters())", "print(opt)", False),  # handed the parameters, never used as one
    ("OPTIMS[name](net)", "fit(net, optimizer=opt)", False),  # handed the module: a wrapper or a factory
    ("OPTIMS[name](lr=0.1)", "fit(net, optimizer=opt)", False),  # handed no parameters: built elsewhere
])
def test_a_call_that_names_nothing_builds_an_optimizer_by_what_it_is_handed_and_its_use(build, use, reported):
    source = "\n".join([
        "import torch", "", "", "def train(net, name, device):", "    params = net.parameters()",
        f"    opt = {build}", "    net.to(device)", f"    {use}", "",
    ])
    for prefilter in (True, False):
        codes = [f.code for f in lint_source(source, "t.py", ALL, prefilter=prefilter)]
        assert ("DDP101" in codes) is reported, (prefilter, codes)
