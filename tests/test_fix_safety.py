"""What "safe" promises (DESIGN §2, README "Fix safety"): each case a user met where a fix labelled safe
turned a working program into a broken one, and the cases that must stay safe."""
import json
import textwrap

import pytest

from ddp_lint.cli import main
from ddp_lint.pipeline import check_text as lint_source
from ddp_lint.fixer.apply import fix_source
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))


def _fix_of(source: str, code: str = None) -> dict:
    findings = [f for f in lint_source(textwrap.dedent(source), "t.py", ALL) if code is None or f.code == code]
    assert findings, "the case must produce a finding"
    return findings[0].fix


def _refused(source: str, *words: str) -> None:
    fix = _fix_of(source)
    assert fix.available is False, fix
    for word in words:
        assert word in fix.reason, fix.reason
    assert fix_source(textwrap.dedent(source), unsafe=True, settings=ALL).source == textwrap.dedent(source)


def _unsafe(source: str, *words: str) -> None:
    fix = _fix_of(source)
    assert fix.available is True and fix.applicability == "unsafe", fix
    for word in words:
        assert word in fix.reason, fix.reason
    dedented = textwrap.dedent(source)
    assert fix_source(dedented, unsafe=False, settings=ALL).source == dedented
    assert fix_source(dedented, unsafe=True, settings=ALL).source != dedented


def _safe(source: str) -> None:
    fix = _fix_of(source)
    assert fix.available is True and fix.applicability == "safe", fix
    assert fix.reason == "", fix


# ----- reads of what moves, between the two points ------------------------------------------------

def test_module_function_reading_the_global_optimizer_refuses_the_move():
    _refused("""
        import torch
        model = torch.nn.Linear(2, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        def describe():
            return type(optimizer).__name__
        print(describe())
        model.cuda()
    """, "line 7 calls `describe()`", "`optimizer`")


def test_function_reaching_the_optimizer_through_another_function_refuses_the_move():
    _refused("""
        import torch
        model = torch.nn.Linear(2, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        def name():
            return type(optimizer).__name__
        def describe():
            return "optimizer: " + name()
        describe()
        model.cuda()
    """, "calls `describe()`")


def test_closure_reading_the_optimizer_refuses_the_move():
    _refused("""
        import torch
        def main():
            model = torch.nn.Linear(2, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            def report():
                print(opt)
            report()
            model.double()
    """, "calls `report()`", "`opt`")


def test_lambda_reading_the_optimizer_refuses_the_move():
    _refused("""
        import torch
        model = torch.nn.Linear(2, 2)
        show = lambda: print(opt)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        show()
        model.double()
    """, "calls `show()`")


def test_class_body_reading_the_optimizer_refuses_the_move():
    _refused("""
        import torch
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        class State:
            optimizer = opt
        model.double()
    """, "`opt`")


def test_a_function_with_its_own_local_of_that_name_does_not_block_the_fix():
    _safe("""
        import torch
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        def other():
            opt = "adam"
            return opt
        other()
        model.double()
    """)


def test_module_function_cannot_see_a_local_optimizer():
    _safe("""
        import torch
        def describe():
            return type(opt).__name__
        def main():
            model = torch.nn.Linear(2, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            describe()
            model.double()
    """)


@pytest.mark.parametrize("line", ['print(locals()["opt"])', "g = globals()", "v = vars()", 'eval("opt")',
                                  'exec("print(opt)")', "names = dir()"])
def test_namespace_access_refuses_the_move(line):
    _refused(f"""
        import torch
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        {line}
        model.double()
    """, "namespace")


def test_method_reading_the_attribute_refuses_the_move():
    _refused("""
        import torch
        class Trainer:
            def __init__(self, model):
                self.model = model
                self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
                self.log_state()
                self.model.cuda()
            def log_state(self):
                print(self.optimizer)
    """, "calls `self.log_state()`", "`self.optimizer`")


def test_inherited_method_between_makes_the_fix_unsafe_at_most():
    fix = _fix_of("""
        import torch
        class Trainer(Base):
            def __init__(self, model):
                self.model = model
                self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
                self.log_state()
                self.model.cuda()
    """)
    assert fix.available and fix.applicability == "unsafe"


# ----- changes to what the moved statement reads -----------------------------------------------------

@pytest.mark.parametrize("line", ["params.clear()", "params.append(extra)", "del params[0]", "params[0] = extra",
                                  "params.extend([extra])", "params += [extra]"])
def test_changing_the_parameter_list_between_refuses_the_move(line):
    _refused(f"""
        import torch
        model = torch.nn.Linear(2, 2)
        extra = torch.nn.Parameter(torch.zeros(2))
        params = list(model.parameters())
        opt = torch.optim.SGD(params, lr=0.1)
        {line}
        model.double()
    """, "`params`")


def test_changing_a_group_through_an_alias_refuses_the_move():
    _refused("""
        import torch
        model = torch.nn.Linear(2, 2)
        groups = [{"params": list(model.parameters()), "lr": 0.1}]
        opt = torch.optim.SGD(groups, lr=0.1)
        for group in groups:
            group["lr"] = 0.2
        model.double()
    """, "`groups`")


def test_a_function_that_clears_the_list_refuses_the_move():
    _refused("""
        import torch
        model = torch.nn.Linear(2, 2)
        params = list(model.parameters())
        opt = torch.optim.SGD(params, lr=0.1)
        def reset():
            params.clear()
        reset()
        model.double()
    """, "calls `reset()`", "`params`")


def test_an_unknown_call_given_the_list_makes_the_fix_unsafe():
    _unsafe("""
        import torch
        model = torch.nn.Linear(2, 2)
        params = list(model.parameters())
        opt = torch.optim.SGD(params, lr=0.1)
        shuffle_groups(params)
        model.double()
    """, "passes `params` to `shuffle_groups()`")


def test_writing_another_field_of_the_config_keeps_the_fix_safe():
    # The ImageNet example: `args.batch_size = ...` between an optimizer that reads `args.lr`.
    _safe("""
        import torch
        def main(args):
            model = torch.nn.Linear(2, 2)
            opt = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum)
            args.batch_size = int(args.batch_size / 2)
            model.cuda(args.gpu)
    """)


def test_writing_the_field_the_optimizer_reads_refuses_the_move():
    _refused("""
        import torch
        def main(args):
            model = torch.nn.Linear(2, 2)
            opt = torch.optim.SGD(model.parameters(), args.lr)
            args.lr = args.lr * 8
            model.cuda(args.gpu)
    """, "`args.lr`")


def test_freezing_between_an_optimizer_that_keeps_trainable_parameters_is_unsafe():
    _unsafe("""
        import torch
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.1)
        for p in model.parameters():
            p.requires_grad = False
        model.cuda()
    """, "require grad")


@pytest.mark.parametrize("line", ["print(model)", 'logger.info("model %s", model)', "n = len(list(model.parameters()))",
                                  "init_weights(model)", "torch.manual_seed(0)"])
def test_reading_or_initialising_the_model_between_keeps_the_fix_safe(line):
    _safe(f"""
        import torch
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        {line}
        model.cuda()
    """)


# ----- what the moved statement receives, and what moves with it -------------------------------------

def test_fsdp1_with_a_loaded_state_is_unsafe_with_the_reason():
    _unsafe("""
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        model = torch.nn.Linear(2, 2)
        ckpt = torch.load("ckpt.pt")
        optimizer = torch.optim.Adam(model.parameters())
        optimizer.load_state_dict(ckpt["opt"])
        model = FSDP(model)
    """, "unsharded", "FSDP.optim_state_dict_to_load")


def test_fsdp1_without_a_loaded_state_stays_safe():
    _safe("""
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        model = torch.nn.Linear(2, 2)
        optimizer = torch.optim.Adam(model.parameters())
        model = FSDP(model)
    """)


def test_overridable_hook_given_the_module_is_unsafe_with_the_reason():
    # detectron2's DefaultTrainer: build_optimizer(cfg, model) is a hook, and expects the bare module.
    _unsafe("""
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        class Trainer:
            def __init__(self, cfg):
                model = self.build_model(cfg)
                optimizer = self.build_optimizer(cfg, model)
                model = DDP(model)
                self.model, self.optimizer = model, optimizer
            def build_optimizer(self, cfg, model):
                return torch.optim.SGD(model.parameters(), lr=0.1)
    """, "`self.build_optimizer()` would receive the wrapper", "`model`")


def test_comment_saying_the_order_matters_makes_the_fix_unsafe():
    _unsafe("""
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = torch.nn.Linear(2, 2)
        # NOTE: the optimizer must be built before wrapping (see issue 42)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model = DDP(model)
    """, "comment", "order")


def test_copying_holder_moves_after_the_move_not_after_the_wrap():
    # An EMA copy built after a DDP wrap would copy the wrapper; it only needs to follow the move.
    source = textwrap.dedent("""
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.optim.swa_utils import AveragedModel
        model = torch.nn.Linear(2, 2)
        swa = AveragedModel(model)
        model.to(0)
        model = DDP(model)
    """)
    fixed = fix_source(source, settings=ALL).source
    assert fixed.index("model.to(0)") < fixed.index("swa = AveragedModel(model)") < fixed.index("model = DDP(model)")


# ----- the reason reaches every output format ----------------------------------------------------------

UNSAFE = """\
import torch
model = torch.nn.Linear(2, 2)
params = list(model.parameters())
opt = torch.optim.SGD(params, lr=0.1)
shuffle_groups(params)
model.double()
"""
REFUSED = """\
import torch
model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
print(locals()["opt"])
model.double()
"""


@pytest.mark.parametrize("source, words", [(UNSAFE, "unsafe fix: line 5 passes `params`"),
                                           (REFUSED, "no automatic fix: line 4 reads the namespace")])
def test_reason_in_text_json_and_sarif(tmp_path, capsys, source, words):
    path = tmp_path / "t.py"
    path.write_text(source)
    main(["--no-cache", "-j", "1", str(path)])
    assert words in capsys.readouterr().out
    main(["--no-cache", "-j", "1", "--output-format", "json", str(path)])
    finding = json.loads(capsys.readouterr().out)["findings"][0]
    assert words.split(": ", 1)[1] in finding["fix"]["reason"]
    main(["--no-cache", "-j", "1", "--output-format", "sarif", str(path)])
    result = json.loads(capsys.readouterr().out)["runs"][0]["results"][0]
    assert words.split(": ", 1)[1] in result["message"]["text"]
    if "unsafe" in words:
        assert words.split(": ", 1)[1] in result["fixes"][0]["description"]["text"]
        assert result["fixes"][0]["properties"]["applicability"] == "unsafe"


# ----- what the optimizer would hold: statements between that change the model's parameters --------

@pytest.mark.parametrize("line, words", [
    ('model.add_module("extra", torch.nn.Linear(2, 2))', ["line 5 calls `model.add_module()`"]),
    ('model.register_module("extra", torch.nn.Linear(2, 2))', ["`model.register_module()`"]),
    ('model.register_parameter("scale", torch.nn.Parameter(torch.ones(1)))', ["`model.register_parameter()`"]),
    ('model[0].register_parameter("scale", torch.nn.Parameter(torch.ones(1)))', ["`model[0].register_parameter()`"]),
    ('setattr(model, "extra", torch.nn.Linear(2, 2))', ["`setattr()`", "`model`"]),
    ('delattr(model, "extra")', ["`delattr()`"]),
    ('torch.nn.utils.parametrize.register_parametrization(model[0], "weight", Sym())', ["register_parametrization"]),
    ("del model.extra", ["line 5 deletes `model.extra`"]),
    ("del model[0]", ["line 5 deletes `model[0]`"]),
    ("model.grow()", ["`model.grow()`", "add, remove or replace parameters"]),
    ("model.load_state_dict(state, strict=False, assign=flag)", ["`model.load_state_dict()`"]),
    ('for m in model.modules():\n    m.register_parameter("scale", None)', ["`m.register_parameter()`"]),
    ('def grow(m):\n    m.add_module("extra", torch.nn.Linear(2, 2))\ngrow(model)', ["`grow()`", "parameters"]),
    ('def grow():\n    model.add_module("extra", torch.nn.Linear(2, 2))\ngrow()', ["`grow()`", "parameters"]),
])
def test_changing_the_models_parameters_between_makes_the_fix_unsafe(line, words):
    # The moved optimizer would hold the parameters added, and miss those removed or replaced.
    _unsafe("""
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(2, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        {line}
        model.double()
    """.replace("{line}", textwrap.indent(line, " " * 8).lstrip()), "parameters", *words)


def test_a_method_of_a_class_in_the_file_that_changes_no_parameter_keeps_the_fix_safe():
    _safe("""
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(2, 2)
                self.calls = 0
            def summary(self):
                return sum(p.numel() for p in self.parameters())
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        n = model.summary()
        model.double()
    """)


def test_a_method_of_a_class_in_the_file_that_adds_a_module_makes_the_fix_unsafe():
    _unsafe("""
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(2, 2)
            def grow(self):
                self.head = torch.nn.Linear(2, 2)
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.grow()
        model.double()
    """, "`model.grow()`", "parameters")


@pytest.mark.parametrize("line", ["model.train()", "model.eval()", "model.zero_grad()", "model.load_state_dict(state)",
                                  "model[0].weight.data.fill_(0.5)", "torch.nn.init.zeros_(model[0].bias)",
                                  "handle = model.register_forward_hook(hook)", "out = model(x)"])
def test_module_methods_that_keep_the_parameters_keep_the_fix_safe(line):
    _safe(f"""
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(2, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        {line}
        model.double()
    """)


def test_requires_grad_switch_on_the_model_is_unsafe_when_the_optimizer_filters_on_it():
    _unsafe("""
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(2, 2))
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
        model[0].requires_grad_(False)
        model.double()
    """, "require grad")


def test_setting_an_attribute_nothing_shows_existed_makes_the_fix_unsafe():
    # `model.extra = Parameter(...)` may add a parameter rather than replace one: the optimizer moved
    # after it would train one more tensor than the program did.
    _unsafe("""
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(2, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.extra = torch.nn.Parameter(torch.ones(1))
    """, "line 5 sets `model.extra`", "parameters")


def test_replacing_a_head_the_code_reads_first_keeps_the_fix_safe():
    _safe("""
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(2, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.fc = torch.nn.Linear(model.fc.in_features, 3)
    """)


# ----- which placements the optimizer must follow ----------------------------------------------------

COMPILE_IN_ANOTHER_METHOD = """
    import torch
    class Trainer:
        def __init__(self, model, device):
            self.model = model
            self.optimizer = torch.optim.Adagrad(self.model.parameters(), lr=0.1)
            self.model.to(device)
        def compile(self):
            self.model = torch.compile(self.model)
"""


def test_torch_compile_elsewhere_is_not_a_placement_the_fix_must_follow_by_default():
    # `torch.compile` keeps the parameters: only DDP201 (opt-in) asks for the optimizer after it.
    source = textwrap.dedent(COMPILE_IN_ANOTHER_METHOD)
    (finding,) = lint_source(source, "t.py", Settings())
    assert finding.code == "DDP002" and finding.fix.available is True, finding.fix
    fixed = fix_source(source, unsafe=True, settings=Settings()).source
    assert fixed.index("self.model.to(device)") < fixed.index("self.optimizer = ")


def test_torch_compile_elsewhere_still_refuses_the_fix_when_ddp201_is_selected():
    with_wraps = Settings(Selection(select=("DDP0", "DDP1", "DDP201")))
    findings = [f for f in lint_source(textwrap.dedent(COMPILE_IN_ANOTHER_METHOD), "t.py", with_wraps)
                if f.code == "DDP002"]
    assert findings[0].fix.available is False and "another method (`compile()`" in findings[0].fix.reason


def test_a_method_of_the_trainer_that_adds_a_head_to_the_model_makes_the_fix_unsafe():
    _unsafe("""
        import torch
        class Trainer:
            def __init__(self, model, device):
                self.model = model
                self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
                self.add_head()
                self.model.to(device)
            def add_head(self):
                self.model.add_module("head", torch.nn.Linear(2, 2))
    """, "`self.add_head()`", "`self.model`")


def test_optimizers_moved_after_one_placement_keep_the_order_they_were_written_in():
    # two holders before one move conflict in one pass; each later pass inserts right after the move,
    # so taking the last-written holder first leaves them in their own order (mnist-svhn-transfer's solver)
    source = textwrap.dedent("""\
        import torch


        def build(g, d, lr):
            g_optimizer = torch.optim.Adam(g.parameters(), lr)
            d_optimizer = torch.optim.Adam(d.parameters(), lr)
            if torch.cuda.is_available():
                g.cuda()
                d.cuda()
            return g_optimizer, d_optimizer
        """)
    fixed = fix_source(source, unsafe=True).source
    lines = [line.strip() for line in fixed.splitlines() if line.strip()]
    assert lines[2:7] == ["if torch.cuda.is_available():", "g.cuda()", "d.cuda()",
                          "g_optimizer = torch.optim.Adam(g.parameters(), lr)",
                          "d_optimizer = torch.optim.Adam(d.parameters(), lr)"], fixed
