"""What a moved statement reads: a lambda's parameters and a comprehension's targets are its own."""
import libcst as cst
import pytest

from ddp_lint.engine import lint_source
from ddp_lint.planning.statements import reads_and_binds


@pytest.mark.parametrize(
    "source,reads",
    [
        ("opt = SGD(filter(lambda p: p.requires_grad, model.parameters()))", {"SGD", "filter", "model", "opt"}),
        ("groups = [p for n, p in model.named_parameters() if n in keep]", {"groups", "model", "keep"}),
        ("f = lambda x, k=scale: x * k", {"f", "scale"}),
        ("total = sum(len(xs) for xs in batches)", {"total", "sum", "len", "batches"}),
    ],
)
def test_own_names_of_lambdas_and_comprehensions_are_not_reads(source, reads):
    assert reads_and_binds(cst.parse_statement(source))[0] == reads


def test_a_lambda_parameter_named_like_a_rebound_name_does_not_refuse_the_fix():
    source = (
        "import torch\n"
        "def train(model, p, device):\n"
        "    opt = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.1)\n"
        "    p = p.to(device)\n"
        "    model.to(device)\n"
    )
    [finding] = lint_source(source)
    assert finding.code == "DDP101" and finding.fix.available, finding.fix
