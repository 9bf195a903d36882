"""The engine's shape (issue 27): small functions in analysis/, and facts from the catalog alone."""
import ast
from pathlib import Path

import pytest

from ddp_lint import catalog as cat
from ddp_lint.engine import lint_source
from ddp_lint.settings import Selection, Settings

ANALYSIS = Path(__file__).resolve().parent.parent / "ddp_lint" / "analysis"


def test_no_function_in_the_analysis_is_longer_than_80_lines():
    long = []
    for path in sorted(ANALYSIS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 80:
                long.append(f"{path.name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long


@pytest.mark.parametrize("method", sorted(cat.TENSOR_COPY_METHODS - {"to", "type"}))
def test_every_move_or_cast_of_a_leaf_tensor_is_a_copy(method):
    source = f"import torch\nw = torch.zeros(3, requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\nw = w.{method}()\n"
    codes = [f.code for f in lint_source(source, "t.py", Settings(Selection(select=("ALL",))))]
    assert codes == ["DDP001"], codes
