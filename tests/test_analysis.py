"""The shared analysis, one behaviour per case: holders, parameter sources, placements, handles,
precision and branches. Each case is a small program and the codes it must produce (ALL selected)."""
import pytest

from ddp_lint.engine import lint_source
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))
H = "import torch\n"


def codes(source):
    return sorted({f.code for f in lint_source(source, settings=ALL)})


HOLDERS = {
    **{f"torch.optim.{name}": f"opt = torch.optim.{name}(model.parameters())\n" for name in
       ["SGD", "Adam", "AdamW", "Adadelta", "Adamax", "ASGD", "LBFGS", "NAdam", "RAdam", "RMSprop", "Rprop", "SparseAdam", "Adafactor"]},
    "import alias module": "import torch.optim as optim\nopt = optim.Adam(model.parameters())\n",
    "from import alias": "from torch.optim import Adam as A\nopt = A(model.parameters())\n",
    "apex": "from apex.optimizers import FusedAdam\nopt = FusedAdam(model.parameters())\n",
    "bitsandbytes": "import bitsandbytes as bnb\nopt = bnb.optim.AdamW8bit(model.parameters())\n",
    "transformers": "from transformers import AdamW\nopt = AdamW(model.parameters())\n",
    "timm factory": "from timm.optim import create_optimizer_v2\nopt = create_optimizer_v2(model, 'adamw', lr=1e-3)\n",
    "lion": "from lion_pytorch import Lion\nopt = Lion(model.parameters(), lr=1e-4)\n",
    "ema": "from torch_ema import ExponentialMovingAverage\nema = ExponentialMovingAverage(model.parameters(), decay=0.99)\n",
    "swa": "from torch.optim.swa_utils import AveragedModel\nswa = AveragedModel(model)\n",
    "generic build_optimizer": "opt = build_optimizer(cfg, model)\nsched = StepLR(opt, 1)\n",
    "generic init_optimizers": "opts = trainer.init_optimizers(model)\nfor o in opts:\n    o.zero_grad()\n",
    "configure_optimizers on model": "opt = model.configure_optimizers()\n",
    "custom Optimizer class": "opt = MyShinyOptimizer(model.parameters())\n",
    "custom Optim class": "opt = FastOptim(model.parameters())\n",
    "generic get_optim": "opt = get_optim(model, lr=0.1)\nscaler.unscale_(opt)\n",
    "same-module helper": "def make(m):\n    return torch.optim.SGD(m.parameters(), lr=0.1)\nopt = make(model)\n",
    "same-module helper via variable": "def make(m):\n    o = torch.optim.SGD(m.parameters(), lr=0.1)\n    return o\nopt = make(model)\n",
}


@pytest.mark.parametrize("name", sorted(HOLDERS))
def test_holder_kinds_are_recognised(name):
    assert "DDP101" in codes(H + HOLDERS[name] + "model.cuda()\n")


# Types from use: a call known by its name alone, handed a module and no parameters, is an optimizer
# only when what it returns is used as one (analysis/uses.py).
NAMED_ONLY = {
    "result never used": "opt = build_optimizer(cfg, model)\n",
    "bare call": "_test_optimizer(model)\n",
    "context manager": "with optim_context(model):\n    pass\n",
    "result used as data": "idx = optimal_indices(model)\nprint(idx[0])\n",
    "local rebound to a helper": "opt = make_optimizer(model)\nopt = None\n",
}


@pytest.mark.parametrize("name", sorted(NAMED_ONLY))
def test_a_name_alone_does_not_make_an_optimizer(name):
    assert codes(H + NAMED_ONLY[name] + "model.cuda()\n") == []


@pytest.mark.parametrize("use", ["opt.step()", "opt.zero_grad()", "sched = torch.optim.lr_scheduler.StepLR(opt, 1)",
                                 "scaler.step(opt)", "train(model, optimizer=opt)", "print(opt.param_groups)",
                                 "model, opt = amp.initialize(model, opt)", "for o in [opt]:\n    o.step()"])
def test_a_named_factory_whose_result_is_used_as_an_optimizer_builds_one(use):
    # the use may come anywhere in the file, here after the move
    found = codes(H + "opt = build_optimizer(cfg, model)\nmodel.cuda()\n" + use + "\n")
    assert found and set(found) <= {"DDP101", "DDP002"}


def test_a_named_factory_kept_in_an_attribute_named_for_optimizers_builds_one():
    # an attribute's uses may lie in another file (a subclass, the training loop)
    assert codes(H + "class T:\n    def f(self, model):\n        self.optimizers = self.init_optimizers(model)\n"
                 "        model.cuda()\n") == ["DDP101"]


SOURCES = {
    "parameters": "model.parameters()",
    "named_parameters comprehension": "[p for n, p in model.named_parameters()]",
    "submodule": "model.encoder.parameters()",
    "ddp .module": "model.module.parameters()",
    "filter": "filter(lambda p: p.requires_grad, model.parameters())",
    "param group dicts": "[{'params': model.encoder.parameters()}, {'params': model.head.parameters(), 'lr': 1e-4}]",
    "chain": "itertools.chain(model.a.parameters(), model.b.parameters())",
    "list()": "list(model.parameters())",
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_parameter_sources(name):
    assert codes(H + f"opt = torch.optim.Adam({SOURCES[name]})\nmodel.cuda()\n") == ["DDP101"]


def test_derived_parameter_variables_and_no_decay_split():
    source = H + (
        "decay, no_decay = [], []\n"
        "for n, p in model.named_parameters():\n"
        "    if 'bias' in n:\n"
        "        no_decay.append(p)\n"
        "    else:\n"
        "        decay.append(p)\n"
        "groups = [{'params': decay, 'weight_decay': 0.01}, {'params': no_decay, 'weight_decay': 0.0}]\n"
        "params = model.parameters()\n"
        "opt = torch.optim.AdamW(params)\n"
        "opt2 = torch.optim.AdamW(groups)\n"
        "model.cuda()\n"
    )
    assert [f.code for f in lint_source(source, settings=ALL)] == ["DDP101", "DDP101"]


def test_append_into_list_makes_it_a_parameter_source():
    source = H + "ps = []\nfor p in model.parameters():\n    ps.append(p)\nopt = torch.optim.SGD(ps, lr=0.1)\nmodel.half()\n"
    assert codes(source) == ["DDP101"]


PLACEMENTS = {
    "to device": ("model.to(device)", "DDP101"),
    "to rank": ("model.to(rank)", "DDP101"),
    "to dtype": ("model.to(torch.float16)", "DDP101"),
    "to dtype kw": ("model.to(dtype=torch.bfloat16)", "DDP101"),
    "cuda": ("model.cuda()", "DDP101"),
    "half": ("model.half()", "DDP101"),
    "float": ("model.float()", "DDP101"),
    "double": ("model.double()", "DDP101"),
    "bfloat16": ("model.bfloat16()", "DDP101"),
    "type": ("model.type(torch.float64)", "DDP101"),
    "to_empty": ("model.to_empty(device='cuda')", "DDP001"),
    "xla": ("model.to(xm.xla_device())", "DDP001"),
    "xla string": ("model.to('xla')", "DDP001"),
    "ddp": ("model = torch.nn.parallel.DistributedDataParallel(model)", "DDP201"),
    "data parallel": ("model = torch.nn.DataParallel(model)", "DDP201"),
    "fsdp default": ("model = torch.distributed.fsdp.FullyShardedDataParallel(model)", "DDP001"),
    "fsdp orig params": ("model = torch.distributed.fsdp.FullyShardedDataParallel(model, use_orig_params=True)", "DDP103"),
    "fully_shard": ("torch.distributed.fsdp.fully_shard(model)", "DDP001"),
    "parallelize_module": ("from torch.distributed.tensor.parallel import parallelize_module\nparallelize_module(model, mesh, plan)", "DDP001"),
    "compile": ("model = torch.compile(model)", "DDP201"),
    "compile method": ("model.compile()", "DDP201"),
    "deepcopy rebind": ("import copy\nmodel = copy.deepcopy(model)", "DDP001"),
    "assign load": ("model.load_state_dict(sd, assign=True)", "DDP001"),
    "weight_norm": ("torch.nn.utils.weight_norm(model.fc)", "DDP001"),
    "prepare_qat": ("model = torch.ao.quantization.prepare_qat(model)", "DDP001"),
    "prepare_qat inplace": ("torch.ao.quantization.prepare_qat(model, inplace=True)", "DDP201"),
    "fuse_modules": ("model = torch.ao.quantization.fuse_modules(model, [['conv', 'bn']])", "DDP001"),
    "submodule reassignment": ("model.fc = torch.nn.Linear(512, 10)", "DDP001"),
    "sync batchnorm": ("model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)", "DDP201"),
    "nested": ("model = torch.nn.parallel.DistributedDataParallel(model.cuda(), device_ids=[0])", "DDP101 DDP201"),
    "chained": ("model = model.cuda().half()", "DDP101"),
    "overwrite flag": ("torch.__future__.set_overwrite_module_params_on_conversion(True)\nmodel.to(device)", "DDP001"),
    # the parameters stay the same objects: canonical order only (semantics row 5)
    "memory format": ("model.to(memory_format=torch.channels_last)", "DDP202"),
    "memory format under the overwrite flag": (
        "torch.__future__.set_overwrite_module_params_on_conversion(True)\nmodel.to(memory_format=torch.channels_last)",
        "DDP001",
    ),
}


@pytest.mark.parametrize("name", sorted(PLACEMENTS))
def test_placements(name):
    placement, expected = PLACEMENTS[name]
    assert codes(H + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + placement + "\n") == expected.split()


NO_PLACEMENT = ["model.to('cpu')", "model.cpu()", "model.train()",
                "model.eval()", "model.type()", "model.load_state_dict(sd)", "torch.distributed.fsdp.fully_shard(other)"]


@pytest.mark.parametrize("statement", NO_PLACEMENT)
def test_operations_that_are_not_placements(statement):
    assert codes(H + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + statement + "\n") == []


HANDLES = {
    "reassign via to": ("model = model.to(device)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel = model.to(device)\n", []),
    "ddp alias then half": ("opt = torch.optim.SGD(model.parameters(), lr=0.1)\nddp = torch.nn.parallel.DistributedDataParallel(model)\nddp.half()\n", ["DDP003", "DDP101", "DDP201"]),
    "alias name": ("net = model\nopt = torch.optim.SGD(net.parameters(), lr=0.1)\nmodel.cuda()\n", ["DDP101"]),
    "tuple assignment": ("class T:\n    def __init__(self, model, opt):\n        self.model, self.opt = model, torch.optim.SGD(model.parameters(), lr=0.1)\n        self.model.cuda()\n", ["DDP101"]),
    "rebinding ends the handle": ("opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel = Net()\nmodel.cuda()\n", []),
    "self attribute across methods": ("class T:\n    def setup(self):\n        self.net.cuda()\n    def __init__(self):\n        self.net = Net()\n        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)\n", ["DDP101"]),
    "helper that moves": ("def place(m):\n    m.cuda()\n    return m\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel = place(model)\n", ["DDP101"]),
    "self.method that moves": ("class T:\n    def __init__(self):\n        self.m = Net()\n        self.o = torch.optim.Adam(self.m.parameters())\n        self.o.load_state_dict(sd)\n        self.place()\n    def place(self):\n        self.m.cuda()\n", ["DDP002"]),
}


@pytest.mark.parametrize("name", sorted(HANDLES))
def test_handles_and_aliases(name):
    source, expected = HANDLES[name]
    assert codes(H + source) == expected


PRECISION = {
    "tensors moved in the loop": "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x, y in loader:\n    x, y = x.to(device), y.to(device)\n    batch = {k: v.cuda() for k, v in b.items()}\n",
    "loss module moved": "opt = torch.optim.SGD(model.parameters(), lr=0.1)\ncriterion = torch.nn.CrossEntropyLoss().to(device)\ncriterion.cuda()\n",
    "other model (GAN)": "opt_d = torch.optim.Adam(disc.parameters())\ngen.cuda()\n",
    "deep copy for EMA": "import copy\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nema = copy.deepcopy(model)\nema.cuda()\n",
    "already placed round trip": "model.cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.cpu()\nmodel.cuda()\n",
    "rebuilt after the placement": "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
    "accelerate": "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel, opt = accelerator.prepare(model, opt)\n",
    "fabric": "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel, opt = fabric.setup(model, opt)\n",
    "deepspeed": "import deepspeed\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nengine, opt, _, _ = deepspeed.initialize(model=model, optimizer=opt)\n",
    "apex amp": "from apex import amp\nmodel.cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel, opt = amp.initialize(model, opt)\nmodel = torch.nn.parallel.DistributedDataParallel(model)\n",
    "placement in another function": "def a():\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\ndef b():\n    model.cuda()\n",
    "exclusive branches": "if resume:\n    opt = torch.optim.Adam(model.parameters())\nelse:\n    model.cuda()\n",
    "fully_shard meta then to_empty": "torch.distributed.fsdp.fully_shard(model)\nopt = torch.optim.Adam(model.parameters())\nmodel.to_empty(device='cuda')\n",
    "moved inside forward": "class M(torch.nn.Module):\n    def forward(self, x):\n        self.buf = self.buf.to(x.device)\n        return x\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
    "half then float round trip": "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.half().float()\n",
    "device bound to the cpu": "device = torch.device('cpu')\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.to(device)\n",
    "parameter-group helper is not an optimizer": "groups = get_optimizer_grouped_parameters(model, 0.01)\nmodel.cuda()\n",
    "optimize is not an optimizer": "fast = torch._dynamo.optimize('inductor')(model)\nmodel.cuda()\n",
    "a predicate is not a factory": "if is_from_optimizer_source(model):\n    pass\nmodel.cuda()\n",
    "a logger is not a factory": "log_optimizer_config(model)\nmodel.cuda()\n",
    "a class named after something else": "var = OptimizerVariable(model, source=src)\nmodel.cuda()\n",
    "state and step helpers are not factories": "sd = get_optimizer_state(model)\nself._optimizer_step_code(model)\nmodel.cuda()\n",
}


@pytest.mark.parametrize("name", sorted(PRECISION))
def test_precision_cases_do_not_fire(name):
    assert codes(H + PRECISION[name]) == []


def test_conditional_placement_fires_and_says_so():
    (finding,) = lint_source(H + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nif args.cuda:\n    model.cuda()\n", settings=ALL)
    assert finding.code == "DDP101" and "conditionally, under `if args.cuda:`" in finding.message


def test_message_names_the_placement_and_its_line():
    (finding,) = lint_source(H + "opt = torch.optim.Adagrad(model.parameters())\n\nmodel.to(device)\n", settings=ALL)
    assert finding.code == "DDP002" and "`model.to(device)` on line 4" in finding.message and "crashes" in finding.message
    assert [(r.line, r.role) for r in finding.related] == [(4, "placement")]


def test_a_yielded_rules_placements_are_named_by_the_report_that_stays():
    # the move comes before the state, the cast after it: DDP101 for the move yields to DDP002 for the
    # cast on the same holder, and the one report names both placements
    source = H + ("opt = torch.optim.Adam(model.parameters())\nmodel.to(device)\n"
                  "opt.load_state_dict(torch.load(path))\nmodel.half()\n")
    (finding,) = lint_source(source, settings=ALL)
    assert finding.code == "DDP002"
    assert [(r.line, r.role) for r in finding.related] == [(5, "placement"), (3, "placement"), (4, "state")]


def test_parameter_group_helper_feeds_the_optimizer_built_from_it():
    source = H + "groups = get_optimizer_grouped_parameters(model, 0.01)\nopt = torch.optim.AdamW(groups)\nmodel.cuda()\n"
    assert [(f.line, f.code) for f in lint_source(source, settings=ALL)] == [(3, "DDP101")]


def test_the_engine_leaves_the_cyclic_collector_as_it_found_it():
    # it pauses the collector while it parses; flake8 and the fixer run in the same process afterwards
    import gc

    from ddp_lint.documents.python import InputError

    source = H + "opt = torch.optim.Adagrad(model.parameters())\nmodel.cuda()\n"
    assert gc.isenabled()
    assert codes(source)
    assert gc.isenabled()
    with pytest.raises(InputError):
        lint_source(source + "model.cuda(\n", settings=ALL)
    assert gc.isenabled()
    gc.disable()
    try:
        assert codes(source)
        assert not gc.isenabled()
    finally:
        gc.enable()


LOOPS = {
    # the second iteration builds the optimizer on what the first one left in `current`
    "next iteration's alias": (
        "def f(a, b):\n    current = a\n    for step in range(2):\n"
        "        opt = torch.optim.SGD(current.parameters(), lr=0.1)\n        current = b\n    b.cuda()\n",
        ["DDP101"],
    ),
    "rebound to a new object on every iteration before use": (
        "def f(a, b, loader):\n    for batch in loader:\n        x = batch.to(device)\n"
        "        opt = torch.optim.SGD(a.parameters(), lr=0.1)\n    b.cuda()\n",
        [],
    ),
    "a body that always returns": (
        "def f(model, loader):\n    for batch in loader:\n"
        "        opt = torch.optim.SGD(model.parameters(), lr=0.1)\n        return opt\n    model.cuda()\n",
        [],
    ),
}


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_loops_run_to_a_fixed_point(name):
    source, expected = LOOPS[name]
    assert codes(H + source) == expected


# Types from use on the callee side: a parameter named like an optimizer arrives built only when the
# body does not call it (a factory) and the file uses it as one, keeps it in an attribute, or it is
# annotated as one.
@pytest.mark.parametrize("body, reported", [
    ("    model.cuda()\n    optimizer.step()\n", True),
    ("    model.cuda()\n    self_optimizer = optimizer\n", False),
    ("    model.cuda()\n    return optimizer(model.parameters())\n", False),
    ("    model.cuda()\n    print(optimizer)\n", False),
])
def test_a_parameter_named_optimizer_arrives_built_only_when_used_as_one(body, reported):
    assert bool(codes(H + "def train(model, optimizer):\n" + body)) is reported


def test_an_annotated_optimizer_parameter_arrives_built_whatever_the_body_does():
    source = H + "def train(model, opt: torch.optim.Optimizer):\n    model.cuda()\n"
    assert codes(source) == ["DDP101"]


def test_a_parameter_kept_in_an_attribute_arrives_built():
    # its uses may lie in the subclass or the training loop of another file
    source = H + "class T:\n    def __init__(self, model, optimizer):\n        self.optimizer = optimizer\n        model.cuda()\n"
    assert codes(source) == ["DDP101"]


def test_an_arriving_optimizer_holds_the_module_its_name_names():
    # `q_func1_optimizer` beside `q_func1`: the name pairs them, though `q_func1` is named like no model
    source = H + ("class SAC:\n    def __init__(self, policy, q_func1, policy_optimizer, q_func1_optimizer, device):\n"
                  "        self.policy = policy\n        self.q_func1 = q_func1\n"
                  "        self.optimizers = (policy_optimizer, q_func1_optimizer)\n        self.policy.to(device)\n"
                  "        self.q_func1.to(device)\n\n    def update(self):\n        for opt in self.optimizers:\n"
                  "            opt.step()\n")
    findings = [(f.line, f.message) for f in lint_source(source, "t.py", Settings(Selection(select=("ALL",))))]
    assert [line for line, _ in findings] == [7, 8]
    assert "`q_func1_optimizer`" in findings[1][1] and "`q_func1`'s parameters" in findings[1][1]


@pytest.mark.parametrize("container", ["nn.ModuleList([policy, q_func])", "nn.Sequential(policy, q_func)",
                                       "nn.ModuleDict({'pi': policy, 'q': q_func})"])
def test_moving_a_container_module_moves_the_modules_it_was_built_from(container):
    source = H + ("from torch import nn\npolicy = Policy()\nq_func = QFunc()\n"
                  "opt = torch.optim.Adam(policy.parameters())\n" f"model = {container}\n" "model.cuda()\n")
    assert codes(source) == ["DDP101"]


def test_a_gradient_scaler_steps_the_optimizer_it_is_handed():
    # `scaler.step(opt)` is a step: the optimizer has state before the move (DDP002, not DDP101)
    assert codes(H + "opt = torch.optim.Adam(model.parameters())\nscaler.step(opt)\nmodel.cuda()\n") == ["DDP002"]
    assert codes(H + "opt = torch.optim.Adam(model.parameters())\nscaler.unscale_(opt)\nmodel.cuda()\n") == ["DDP101"]
