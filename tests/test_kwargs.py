"""`**kwargs` keys as arguments (issue 27, cause 1d): `kwargs["model"]` is what callers pass as
`model=`; a key called is a factory, a key spread with `**` is a dict of settings."""
import libcst as cst
import pytest

from ddp_lint.analysis.kwargs import read_kwargs
from ddp_lint.engine import lint_source
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))


def test_keys_and_how_the_body_uses_them():
    function = cst.parse_statement(
        "def f(a, **kw):\n"
        "    opt = kw['optimizer']\n"
        "    cfg = kw.get('sched', {})\n"
        "    make = kw.pop('factory')\n"
        "    make(a)\n"
        "    build(**cfg)\n"
        "    kw['model'].to(kw['device'])\n"
        "    other['model']\n"
    )
    uses, _ = read_kwargs(function, "kw")
    assert list(uses) == ["optimizer", "sched", "factory", "model", "device"]
    assert (uses["factory"].called, uses["sched"].spread) == (True, True)
    assert not (uses["optimizer"].called or uses["optimizer"].spread)


BODY = '''import torch


def fit(**kwargs):
    model = kwargs["model"]
    optimizer = {read}
    kwargs["model"].to(kwargs.get("device", "cuda"))
    for x in kwargs["loader"]:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()


def main(net, loader):
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    fit(model=net, optimizer=opt, loader=loader)
'''


@pytest.mark.parametrize("read, lines", [
    ('kwargs["optimizer"]', [7]),  # one bug, one report: the callee's move, not again at the caller
    ('kwargs.get("optimizer")', [7]),
    # a factory or settings: the optimizer is built here, before the move, and reported where it is built
    ('kwargs["optimizer"](model.parameters())', [6]),
    ('torch.optim.SGD(model.parameters(), **kwargs["optimizer"])', [6]),
])
def test_an_optimizer_arriving_in_kwargs_is_reported_once_at_the_move(read, lines):
    source = BODY.format(read=read)
    for prefilter in (True, False):
        found = [f.line for f in lint_source(source, "t.py", ALL, prefilter=prefilter) if f.code == "DDP101"]
        assert found == lines, (prefilter, found)


def test_the_whole_kwargs_is_known_only_when_it_is_read_by_keys_or_spread():
    def spreads(source):
        function = cst.parse_module(source).body[0]
        return read_kwargs(function, "kw")[1]

    handed = spreads('def f(**kw):\n    if "a" in kw:\n        g(kw["a"], kw.get("b"))\n    return h(**kw)\n')
    assert handed is not None and len(handed) == 1
    assert spreads("def f(**kw):\n    self.options = kw\n") is None
    assert spreads("def f(**kw):\n    for k in kw:\n        pass\n") is None
    assert spreads("def f(**kw):\n    return kw.get(name)\n") is None


SPREAD = '''import torch


class Base:
    def __init__(self, model=None, device="cuda", **settings):
        self.model = model.to(device)


class Trainer(Base):
    def __init__(self, model, **kwargs):
        kwargs["model"] = model
        kwargs["scheduler.params.total_num_steps"] = 10  # a dotted key: no keyword can carry it
        kwargs["lambda"] = 0.5  # a keyword of the language: neither
        super().__init__(**kwargs)


def main(model):
    optimizer = torch.optim.Adam(model.parameters())
    return Trainer(model), optimizer
'''


def test_a_dict_filled_by_keys_and_spread_hands_the_keys_that_can_be_keywords():
    # `model` reaches the base that moves it; the keys no keyword can carry are left out, not an error
    found = lint_source(SPREAD, "spread.py")
    assert [(f.line, f.code) for f in found] == [(18, "DDP101")]
