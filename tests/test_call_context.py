"""Calls in context (analysis/context.py): a call's literal arguments decide the callee's branches."""
import textwrap

import libcst as cst
import pytest

from ddp_lint.analysis.context import call_truths, decidable_parameters, never_runs, truth_of
from ddp_lint.analysis.events import Guard
from ddp_lint.engine import lint_source
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))

WRAPPED = """
import torch

class Wrapped:
    def __init__(self, net, use_half=False, *, compile_it=None):
        self.net = net
        {rebind}
        if use_half and not compile_it:
            self.net = net.half()

def main(net, flag):
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    wrapped = {call}
    return wrapped, opt
"""


@pytest.mark.parametrize("call, rebind, reported", [
    ("Wrapped(net)", "", False),  # the default leaves the branch out
    ("Wrapped(net, False)", "", False),
    ("Wrapped(net, True)", "", True),
    ("Wrapped(net, use_half=1)", "", True),
    ("Wrapped(net, True, compile_it=True)", "", False),  # `not compile_it` is false
    ("Wrapped(net, True, compile_it=None)", "", True),
    ("Wrapped(net, flag)", "", True),  # unknown: the event stays
    ("Wrapped(net, **{'use_half': True})", "", True),  # a spread may pass it: the default is not assumed
    ("Wrapped(net)", "use_half = use_half or torch.cuda.is_available()", True),  # rebound: undecided
])
def test_literal_arguments_decide_the_constructor_branch(call, rebind, reported):
    source = textwrap.dedent(WRAPPED).format(call=call, rebind=rebind or "pass")
    codes = [f.code for f in lint_source(source, "t.py", ALL)]
    assert ("DDP101" in codes) is reported, codes


def test_truths_are_three_valued():
    function = cst.parse_statement("def f(a, b=False, c=None, *, d=1, e=x): a = 2")
    decidable = decidable_parameters(function, False, {"a"})
    assert decidable == {"b": (1, False), "c": (2, False), "d": (1 << 30, True), "e": (1 << 30, None),
                         "b is None": (1, False), "c is None": (2, True), "d is None": (1 << 30, False),
                         "e is None": (1 << 30, None),
                         "b value": (1, (False,)), "c value": (2, (None,)), "d value": (1 << 30, (1,)),
                         "e value": (1 << 30, None)}
    call = cst.parse_expression("f(0, True, c=y)")
    truths = call_truths(decidable, call.args)
    assert truths == {"b": True, "d": True, "b is None": False, "d is None": False,
                      "b value": (True,), "d value": (1,)}
    left_out = call_truths(decidable, cst.parse_expression("f(0)").args)
    assert left_out["c is None"] is True and left_out["c"] is False
    assert truth_of(cst.parse_expression("c is None"), left_out) is True
    assert truth_of(cst.parse_expression("c is not None"), left_out) is False
    assert truth_of(cst.parse_expression("e is None"), left_out) is None  # a default that is no literal
    assert not never_runs([Guard(cst.parse_expression("b and (c or not d)"), True)], truths)  # c decides
    assert never_runs([Guard(cst.parse_expression("b and not d"), True)], truths)
    assert never_runs([Guard(cst.parse_expression("c or not b"), True)], {"b": True, "c": False})
    assert never_runs([Guard(cst.parse_expression("d"), False)], truths)


def test_comparisons_with_a_literal_are_decided_by_the_literal_passed_or_left_default():
    function = cst.parse_statement("def save(net, path, local_rank=-1, mode='train'): pass")
    decidable = decidable_parameters(function, False, ())
    left_out = call_truths(decidable, cst.parse_expression("save(net, path)").args)
    assert truth_of(cst.parse_expression("local_rank > -1"), left_out) is False
    assert truth_of(cst.parse_expression("local_rank == -1"), left_out) is True
    assert truth_of(cst.parse_expression("mode != 'train'"), left_out) is False
    passed = call_truths(decidable, cst.parse_expression("save(net, path, 0)").args)
    assert truth_of(cst.parse_expression("local_rank > -1"), passed) is True
    assert truth_of(cst.parse_expression("local_rank >= 1"), passed) is False
    unknown = call_truths(decidable, cst.parse_expression("save(net, path, rank)").args)
    assert truth_of(cst.parse_expression("local_rank > -1"), unknown) is None  # not a literal: unknown
    assert truth_of(cst.parse_expression("local_rank > other"), passed) is None  # nor is the other side
    none = call_truths(decidable_parameters(cst.parse_statement("def f(n=None): pass"), False, ()),
                       cst.parse_expression("f()").args)
    assert truth_of(cst.parse_expression("n > 0"), none) is None  # the run would raise: nothing decided
