"""What a finding's message says about the path and the models: the explanations issue 12 found wrong."""
from ddp_lint.pipeline import check_text as lint_source
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))


def message(source: str) -> str:
    [finding] = lint_source("import torch\n" + source, settings=ALL)
    return finding.message


def test_a_learning_rate_list_handed_to_a_factory_is_no_model():
    text = message("def f(g, device):\n    lrs = [1e-3, 1e-4]\n    opt = build_optimizer(g, lrs)\n    g.to(device)\n"
                   "    opt.step()\n")
    assert "`g`'s parameters" in text and "lrs" not in text


def test_the_trainer_a_factory_is_called_on_is_no_model():
    text = message(
        "class Loop:\n    def run(self, model):\n        self.optimizers = self.trainer.init_optimizers(model)\n        model.cuda()\n"
    )
    assert "`model`'s parameters" in text and "self.trainer" not in text


def test_the_path_of_a_checkpoint_branch_is_named():
    text = message(
        "def f(resume, device):\n    if resume is None:\n        net = Net()\n"
        "        opt = torch.optim.SGD(net.parameters(), lr=0.1)\n    else:\n"
        "        net, opt = load(resume)\n    net = net.to(device)\n"
    )
    assert "on the path where `resume is None`" in text


def test_a_managed_call_on_one_path_is_named_as_the_exception():
    text = message(
        "from apex import amp\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def f(net, use_apex):\n    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "    if use_apex:\n        net, opt = amp.initialize(net, opt)\n    net = DDP(net)\n"
    )
    assert "unless `use_apex`" in text


def test_an_else_arm_is_named_by_its_negated_test():
    text = message(
        "def f(net, use_gpu):\n    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "    if use_gpu:\n        pass\n    else:\n        net.half()\n"
    )
    assert "unless `use_gpu`" in text


def test_settings_handed_to_a_param_group_collector_are_no_model():
    text = message(
        "def f(model, args):\n    opt = torch.optim.SGD(get_parameter_groups(model, args.wd), lr=0.1)\n"
        "    model.to(args.device)\n"
    )
    assert "built on `model`'s parameters" in text and "args.wd" not in text


def test_an_optimizer_class_looked_up_in_the_module_dict_is_named():
    text = message("def f(cfg, model):\n    opt = torch.optim.__dict__[cfg.optim](model.parameters())\n    model.cuda()\n")
    assert "(torch.optim.__dict__[...]())" in text
