"""Generic aliases in annotations (analysis/aliases.py): what a project's alias stands for."""
from ddp_lint.analysis.aliases import alias_in, expand

MODULE = '''from typing import Any, Callable, Dict, TypeVar, Union

T = TypeVar("T")
K = TypeVar("K")
Instance = Union[T, Dict[str, Any]]
Pair = Dict[K, T]
Plain = SomeFactory()
'''


def lookup(name):
    return alias_in(MODULE, name)


def test_an_alias_is_its_right_hand_side_with_its_type_variables():
    assert alias_in(MODULE, "Instance") == ("Union[T, Dict[str, Any]]", ("T", "K"))


def test_an_assignment_that_is_no_subscripted_type_is_no_alias():
    assert alias_in(MODULE, "Plain") is None
    assert alias_in(MODULE, "Missing") is None


def test_expansion_replaces_the_type_variables_in_order_of_appearance():
    assert expand("Optional[Instance[Optimizer]]", lookup) == "Optional[Union[Optimizer, Dict[str, Any]]]"
    assert expand("Pair[str, Optimizer]", lookup) == "Dict[str, Optimizer]"


def test_typing_generics_and_unknown_names_stay_as_written():
    assert expand("Optional[Optimizer]", lookup) == "Optional[Optimizer]"
    assert expand("Lazy[Optimizer]", lookup) == "Lazy[Optimizer]"
    assert expand("Optimizer", lookup) == "Optimizer"


def test_an_annotation_that_does_not_parse_is_left_alone():
    assert expand("Instance[", lookup) == "Instance["


def test_a_literal_getattr_is_the_attribute_it_names():
    import libcst as cst

    from ddp_lint.analysis.names import callee_name, dotted_name

    assert dotted_name(cst.parse_expression('getattr(self, "netG")')) == "self.netG"
    assert dotted_name(cst.parse_expression('getattr(getattr(a, "b"), "c").d')) == "a.b.c.d"
    assert dotted_name(cst.parse_expression('getattr(self, "net" + str(i))')) is None  # named at run time
    assert dotted_name(cst.parse_expression('getattr(model, "module", model)')) is None  # maybe the default
    assert dotted_name(cst.parse_expression('getattr(self, f"net{i}")')) is None
    assert callee_name(cst.parse_expression('getattr(module, "Adversarial")(args)').func) == "module.Adversarial"
