"""Calls in context: what a call's constant arguments decide inside the function it calls.

A summary is made once per function, but a branch of it may run for one call and not another:
`Wrapped(net)` leaves `use_half=False`, so the constructor's `if use_half: self.net = net.half()` does
not happen for that call, while `Wrapped(net, use_half=True)` casts the net. The summary keeps, for
each parameter the function never rebinds, its position and the truth of its literal default; a call
fills in what it passes as a literal, and an event of the summary whose own conditions are false for
that call is not replayed there. Anything not literal is unknown, and unknown never drops an event.
"""
from __future__ import annotations

import ast
import operator
from typing import Dict, FrozenSet, Iterable, Mapping, Optional, Sequence, Tuple

import libcst as cst

from .events import Guard
from .names import dotted_name, plain_text

# name -> (position among the arguments a caller passes, the truth of its literal default or None);
# `name is None` -> the same for whether it is None (`def apply(model, mix, device=None)`);
# `name value` -> the same for the literal itself, held in a 1-tuple (`None` is a literal too), which
# decides comparisons with another literal (`if local_rank > -1:` when the call leaves `local_rank=-1`).
Decidable = Dict[str, Tuple[int, object]]
NONE_TEST = " is None"
VALUE_OF = " value"


class _DeviceIndex:
    """What a caller passes that the file also hands a wrapper as a device index (`device_ids=[opt.local_rank]`):
    no literal, but a whole number from 0 up, which decides `local_rank > -1`."""

    def __repr__(self) -> str:
        return "<a device index>"


DEVICE_INDEX = _DeviceIndex()


def parameter_of(key: str) -> str:
    """The parameter a key of a Decidable or of a call's truths is about."""
    return key.removesuffix(NONE_TEST).removesuffix(VALUE_OF)


def is_static(function: cst.FunctionDef) -> bool:
    """`@staticmethod`: called through an object or its class, it is handed no object first."""
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in function.decorators)


def decidable_parameters(function: cst.FunctionDef, is_method: bool, rebound: Iterable[str]) -> Decidable:
    """The parameters whose truth a call can decide: those the body never assigns again."""
    params = list(function.params.posonly_params + function.params.params)
    if is_method and params:
        params = params[1:]
    reassigned = set(rebound)
    decidable: Decidable = {}
    for index, param in enumerate(params + list(function.params.kwonly_params)):
        name = param.name.value
        if name in reassigned:
            continue
        position = index if index < len(params) else 1 << 30  # keyword-only: never by position
        decidable[name] = (position, literal_truth(param.default) if param.default is not None else None)
        decidable[name + NONE_TEST] = (position, literal_is_none(param.default) if param.default is not None else None)
        decidable[name + VALUE_OF] = (position, literal_value(param.default) if param.default is not None else None)
    return decidable


def literal_value(node: cst.BaseExpression) -> Optional[Tuple[object]]:
    """`(-1,)` for `-1`, `(None,)` for `None`: a number, string, `True`/`False`/`None` or a negated number,
    in a 1-tuple; None for anything not literal."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _plain_literal(node.expression)
        return (-inner[0],) if inner is not None and isinstance(inner[0], (int, float)) and not isinstance(
            inner[0], bool) else None
    return _plain_literal(node)


def literal_truth(node: cst.BaseExpression) -> Optional[bool]:
    """`False`, `None`, `0`, `""` and the like as Python judges them; None for anything not literal."""
    value = _plain_literal(node)
    return None if value is None else bool(value[0])


def literal_is_none(node: cst.BaseExpression) -> Optional[bool]:
    """`None` is None, any other literal is not; None for anything not literal."""
    value = _plain_literal(node)
    return None if value is None else value[0] is None


def _plain_literal(node: cst.BaseExpression) -> Optional[Tuple[object]]:
    """A number, a string or `True`/`False`/`None` as written, in a 1-tuple; None for anything else."""
    if isinstance(node, cst.Name):
        return (_NAMED_LITERALS[node.value],) if node.value in _NAMED_LITERALS else None
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        try:
            return (ast.literal_eval(node.value),)
        except (ValueError, SyntaxError):
            return None
    return None


_NAMED_LITERALS = {"True": True, "False": False, "None": None}
_COMPARISONS = {
    cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge,
}


def call_truths(decidable: Decidable, args: Sequence[cst.Arg], device_indices: FrozenSet[str] = frozenset()
                ) -> Dict[str, object]:
    """The truth of each decidable parameter at this call (and whether it is None, and its literal): the
    literal passed, else the literal default when nothing can pass it (a `*args` or `**kwargs` at the
    call may). `device_indices`: the texts the file hands a wrapper as device indices (what is passed as
    one of them is a whole number from 0 up)."""
    positional = [arg for arg in args if arg.keyword is None and arg.star == ""]
    keywords = {arg.keyword.value: arg for arg in args if arg.keyword is not None}
    spread = any(arg.star for arg in args)
    truths: Dict[str, object] = {}
    for name, (position, default) in decidable.items():
        passed = positional[position] if position < len(positional) else keywords.get(parameter_of(name))
        if passed is not None:
            truth = (literal_is_none(passed.value) if name.endswith(NONE_TEST) else
                     literal_value(passed.value) if name.endswith(VALUE_OF) else literal_truth(passed.value))
            if truth is None and device_indices and name.endswith(VALUE_OF) and "".join(
                    plain_text(passed.value).split()) in device_indices:
                truth = (DEVICE_INDEX,)
        else:
            truth = None if spread else default
        if truth is not None:
            truths[name] = truth
    return truths


def _index_compared(compare, other: Optional[Tuple[object]]) -> Optional[bool]:
    """A device index (0 or more) against a literal: decided only where every such index agrees."""
    if compare is None or other is None or isinstance(other[0], bool) or not isinstance(other[0], (int, float)):
        return None
    answers = {bool(compare(index, other[0])) for index in (0, 1, max(1, int(other[0]) + 1))}
    return answers.pop() if len(answers) == 1 else None


def never_runs(guards: Sequence[Guard], truths: Mapping[str, bool]) -> bool:
    """Whether one of the conditions on the way to an event is false for this call."""
    return bool(truths) and any(truth_of(guard.test, truths) is (not guard.holds) for guard in guards)


def truth_of(test: cst.BaseExpression, truths: Mapping[str, bool]) -> Optional[bool]:
    """Three-valued: True, False, or None when the call does not decide it."""
    name = dotted_name(test)
    if name is not None:
        return truths.get(name)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        name = dotted_name(test.left)
        if (name is not None and isinstance(target.comparator, cst.Name) and target.comparator.value == "None"
                and isinstance(target.operator, (cst.Is, cst.IsNot))):
            none = truths.get(name + NONE_TEST)
            return None if none is None else none is isinstance(target.operator, cst.Is)
        known, other = truths.get(name + VALUE_OF) if name is not None else None, literal_value(target.comparator)
        compare = _COMPARISONS.get(type(target.operator))
        if known is not None and known[0] is DEVICE_INDEX:
            return _index_compared(compare, other)
        if known is not None and other is not None and compare is not None:
            try:
                return bool(compare(known[0], other[0]))
            except TypeError:  # `None > -1`: the run would raise; nothing is decided here
                return None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = truth_of(test.expression, truths)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = truth_of(test.left, truths), truth_of(test.right, truths)
        if isinstance(test.operator, cst.And):
            if left is False or right is False:
                return False
            return True if left is True and right is True else None
        if left is True or right is True:
            return True
        return False if left is False and right is False else None
    return None
