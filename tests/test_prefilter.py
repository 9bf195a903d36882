"""The prefilter's stages: each accepts every source with a finding, however it is formatted, and each
rejects what it is there to reject (so a stage that silently stopped working would fail here)."""
import ast
import textwrap

import pytest

from ddp_lint.engine import lint_source
from ddp_lint.prefilter import code_only, could_match, stage_decisions, tree_could_match
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))
ACCEPT_ALL = {"text": True, "code": True, "tree": True}

HEAD = "import torch\nfrom torch import nn\nmodel = nn.Linear(2, 2)\nopt = torch.optim.Adagrad(model.parameters())\n"

# Each is a finding written the way real code (or a formatter, or a determined user) may write it.
FORMATTED = {
    "spaces around the dot": HEAD + "model . cuda ()\n",
    "backslash continuation": HEAD + "model.\\\n    cuda()\n",
    "comment between tokens": HEAD + "(model.  # move it\n    cuda())\n",
    "parenthesised submodule": HEAD + "model.inner = nn.Sequential()\nmodel.inner.fc = (\n    nn.Linear(2, 2)\n)\n",
    "annotated submodule": HEAD + "model.inner = nn.Sequential()\nmodel.inner.fc: nn.Module = nn.Linear(2, 2)\n",
    "lower-case alias of an nn class": "from torch.nn import Linear as lin\n" + HEAD + "model.inner = nn.Sequential()\nmodel.inner.fc = lin(2, 2)\n",
    "assign spelled in parentheses": HEAD + "model.load_state_dict(sd, assign=(True))\n",
    "aliased optimizer": "import torch\nfrom torch.optim import Adagrad as A\nmodel = torch.nn.Linear(2, 2)\nopt = A(model.parameters())\nmodel.double()\n",
    "aliased deepcopy": "from copy import deepcopy as dc\n" + HEAD + "model = dc(model)\n",
    "quotes in strings around the code": HEAD + "x = \"it's\"; y = '\"'\nmodel.double()  # don't\n",
    "docstring above the code": '"""Trains with `opt.step()`."""\n' + HEAD + "model.double()\n",
    "f-string with a nested field": HEAD + "name = f\"{model!r:{10}}\"\nmodel.double()\n",
    "discarded wrapper, no optimizer": "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = torch.nn.Linear(2, 2)\nDDP(model)\nloss = model(x)\n",
}


@pytest.mark.parametrize("source", FORMATTED.values(), ids=FORMATTED.keys())
def test_every_stage_accepts_a_finding_however_it_is_formatted(source):
    assert lint_source(source, settings=ALL, prefilter=False), "the example must be a finding"
    assert stage_decisions(source, with_wraps=True) == ACCEPT_ALL
    assert stage_decisions(source, with_wraps=False) == ACCEPT_ALL
    assert lint_source(source, settings=ALL) == lint_source(source, settings=ALL, prefilter=False)


# What each later stage is for: the earlier stage accepts, this one rejects, and there is no finding.
ONLY_IN_PROSE = textwrap.dedent('''
    """Example:

        opt = torch.optim.SGD(model.parameters(), lr=0.1)
    """
    def pad(x, device):
        return x.to(device)  # unlike an optimizer, a tensor may move at any time
''')
NAMED_BUT_NOT_CALLED = "def describe(optimizer_state, x, device):\n    return optimizer_state, x.to(device)\n"


def test_code_stage_rejects_words_that_only_appear_in_docstrings_and_comments():
    assert stage_decisions(ONLY_IN_PROSE) == {"text": True, "code": False, "tree": False}
    assert not lint_source(ONLY_IN_PROSE, settings=ALL, prefilter=False)
    assert not could_match(ONLY_IN_PROSE)


def test_tree_stage_rejects_a_holder_word_that_is_never_called():
    assert stage_decisions(NAMED_BUT_NOT_CALLED) == {"text": True, "code": True, "tree": False}
    assert not lint_source(NAMED_BUT_NOT_CALLED, settings=ALL, prefilter=False)


def test_tree_stage_uses_a_given_tree_instead_of_parsing():
    # flake8 hands over its own tree; an empty one must be what decides
    assert not could_match(HEAD + "model.cuda()\n", tree=ast.parse("pass"))
    assert could_match(HEAD + "model.cuda()\n", tree=ast.parse(HEAD + "model.cuda()\n"))


def test_wrappers_count_only_when_the_canonical_order_rule_runs():
    source = "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters())\nmodel = torch.compile(model)\n"
    tree = ast.parse(source)
    assert tree_could_match(tree, with_wraps=True)
    assert not tree_could_match(tree, with_wraps=False)


def test_unparsable_text_goes_on_to_libcst_which_reports_it():
    broken = HEAD + "model.cuda(\n"
    assert could_match(broken)


@pytest.mark.parametrize(
    "text, expected",
    [
        ('x = "a#b"  # c\nmodel.cuda()', "x =     \nmodel.cuda()"),
        ("'''doc\nopt = Adam()'''\nmodel.to(d)", " \nmodel.to(d)"),
        ('rb"x" + Rb"y" + br"z"', "  +   +  "),
        ("if\"x\": pass", "if : pass"),
        ('f"{model.cuda()}" "#not a comment"', 'f"{model.cuda()}"  '),
        ("s = 'a\\\nb'; t = 1", "s =  ; t = 1"),
    ],
)
def test_code_only_blanks_comments_and_plain_strings_and_keeps_f_string_fields(text, expected):
    assert code_only(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        'f"{d["key"]}"; model.cuda()',  # Python 3.12 nests the same quotes
        'f"{x\n}"',  # a 3.12 field spanning lines in a one-line f-string
        "s = 'never closed\nmodel.cuda()",
    ],
)
def test_code_only_gives_up_where_its_lexing_could_be_wrong(text):
    assert code_only(text) is None


SYNTAX_TOUR = textwrap.dedent('''
    import a.b as c
    from d import e as f, g
    global_value = {**base, "k": [x async for x in y] if z else {v: w for v, w in q}}
    def outer(p, /, q=1, *r, s, **t) -> "T":
        global global_value
        nonlocal_holder = lambda u: (yield u)
        with open(p) as handle, ctx() as (one, two):
            del one
        try:
            raise E from None
        except (A, B) as err:
            pass
        else:
            assert q, f"{q!r:>{10}}"
        finally:
            return t[1:2, ...]
    class K(Base, metaclass=M):
        attr: int = 3
        @decorate(1)
        async def method(self):
            async for i in self:
                await i
            match self:
                case {"k": v, **rest}:
                    pass
                case Point(x=0, y=[1, *others]) | None:
                    pass
                case str() as s if s:
                    pass
''')


@pytest.mark.parametrize("name,source", [("syntax tour", SYNTAX_TOUR), ("head", HEAD)])
def test_tree_walk_reaches_every_node_ast_walk_does_but_contexts_and_aliases(name, source):
    from ddp_lint.prefilter import _walk

    tree = ast.parse(source)
    expected = {id(n) for n in ast.walk(tree) if not isinstance(n, (ast.expr_context, ast.alias))}
    assert {id(n) for n in _walk(tree)} == expected


CLASS_AS_VALUE = {
    "chosen by a condition": ("import torch\n\ndef train(model, args):\n"
                              "    cls = torch.optim.AdamW if args.adamw else torch.optim.SGD\n"
                              "    opt = cls(model.parameters(), lr=0.1)\n    model.cuda()\n    return opt\n"),
    "from a module-level table": ("from torch import optim\n\nOPTIMIZERS = {'adam': optim.Adam, 'sgd': optim.SGD}\n\n"
                                  "def train(model, name):\n    opt = OPTIMIZERS[name](model.parameters())\n"
                                  "    model.cuda()\n    return opt\n"),
}


@pytest.mark.parametrize("name", sorted(CLASS_AS_VALUE))
def test_tree_stage_accepts_an_optimizer_class_read_as_a_value(name):
    # the engine finds these (an optimizer class is a value that builds one when called): so must the stage
    source = CLASS_AS_VALUE[name]
    assert lint_source(source, settings=ALL, prefilter=False)
    assert stage_decisions(source) == ACCEPT_ALL


def test_tree_stage_does_not_take_the_optimizer_module_read_as_a_value_for_a_class():
    # `optim.lr_scheduler` reads the module, not an optimizer class: nothing here builds one
    source = ("import torch.optim as optim\n\ndef sched(model, opt_state):\n"
              "    model.cuda()\n    return optim.lr_scheduler, opt_state\n")
    assert not lint_source(source, settings=ALL, prefilter=False)
    assert stage_decisions(source)["tree"] is False


@pytest.mark.parametrize("assignment, passes", [
    ("agent.q = NN(input_dim=4)\n", True),  # a library's class: in place of a held module, a new one
    ("agent.q = QNet(4, 2)\n", True),
    ("cfg.model = Namespace(**vars(args))\n", False),  # the standard library's: never a module
    ("agent.q = argparse.Namespace(lr=0.1)\n", False),
    ("agent.opt = torch.optim.SGD(agent.q.parameters(), lr=0.1)\n", False),  # a holder, no placement
])
def test_tree_stage_counts_a_class_call_bound_to_an_attribute_that_may_make_a_module(assignment, passes):
    source = ("import argparse\nimport torch\nfrom argparse import Namespace\nfrom nn_builder.pytorch.NN import NN\n\n\n"
              "def rebuild(agent, cfg, args):\n    opt = torch.optim.Adam(agent.q.parameters())\n"
              + textwrap.indent(assignment, "    ") + "    return opt\n")
    assert tree_could_match(ast.parse(source)) is passes


@pytest.mark.parametrize("line, holder", [
    ("self.actor_opt = actor_opt_fn(self.actor_params + self.body_params)\n", True),  # handed parameters
    ("self.opt = make(self.body.parameters())\n", True),
    ("self.opt = read_options(self.config_path)\n", False),  # handed no parameters: options
    ("self.adopt = adopt_fn(self.actor_params)\n", False),  # `opt` inside a word is no short name
    ("self.actor_init = init_fn(self.actor_params)\n", False),  # parameters, but kept as no optimizer
])
def test_every_stage_asks_for_an_optimizer_short_name_bound_to_a_call_handed_parameters(line, holder):
    source = ("import torch\nfrom torch import nn\n\n\nclass Heads(nn.Module):\n"
              "    def __init__(self, actor_opt_fn, device):\n        super().__init__()\n"
              "        self.body = nn.Linear(4, 2)\n        self.actor_params = list(self.body.parameters())\n"
              "        self.body_params = self.actor_params\n" + textwrap.indent(line, " " * 8)
              + "        self.to(device)\n")
    found = bool(lint_source(source, settings=ALL, prefilter=False))
    assert found is holder
    assert all(stage_decisions(source).values()) is holder


@pytest.mark.parametrize("body, found", [
    ('op_cfg = spec.get("optimizer", {})\nop_cfg["params"] = model.parameters()\nopt = instantiate(op_cfg)\n', True),
    ('op_cfg = spec["optimizer"]\nop_cfg["params"] = model.parameters()\nopt = instantiate(op_cfg)\n', True),
    ('op_cfg = spec.get("optimizer", {})\nlog("optimizer: %s", op_cfg)\n', False),  # read, handed to no factory
    ('op_cfg = spec.get("scheduler", {})\nop_cfg["params"] = model.parameters()\nsched = instantiate(op_cfg)\n', False),
])
def test_tree_stage_counts_a_config_entry_for_the_optimizer_handed_to_a_call(body, found):
    source = ("import torch\nfrom .utils import instantiate, log\n\n\ndef build(model, spec):\n"
              + textwrap.indent(body, "    ") + "    model.cuda()\n")
    assert bool(lint_source(source, settings=ALL, prefilter=False)) is found
    assert tree_could_match(ast.parse(source)) is found


def test_the_standard_library_is_known_where_sys_does_not_list_it():
    # Python 3.9 has no `sys.stdlib_module_names`: the interpreter's own folders are read instead, and a
    # class of the standard library (`argparse.Namespace`) is then still no module of the project
    import importlib.util
    import sys

    from ddp_lint import syntax

    on_disk = syntax._standard_library_on_disk()
    assert {"argparse", "collections", "os", "json", "typing", "dataclasses", "math", "sys"} <= on_disk
    assert not {"torch", "libcst", "ddp_lint", "pytest", "site-packages"} & on_disk
    listed = getattr(sys, "stdlib_module_names", frozenset())
    missing = {name for name in listed - on_disk if not name.startswith("_") and importlib.util.find_spec(name)}
    assert not missing
