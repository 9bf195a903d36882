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


def _catalog_names():
    """The PyTorch names the catalog knows: its tables' method names and torch's dotted names."""
    names = set()
    for value in vars(cat).values():
        items = value.keys() if isinstance(value, dict) else value if isinstance(value, (frozenset, set, tuple)) else ()
        names.update(item for item in items if isinstance(item, str))
        if isinstance(value, str):
            names.add(value)
    builtin = set(dir(__builtins__) if isinstance(__builtins__, dict) is False else __builtins__) | {
        "True", "False", "None", "append", "extend", "insert", "update", "add", "format", "__dict__"}
    return {n for n in names if n and n not in builtin and (n.startswith("torch") or n.replace("_", "").isalnum())}


def test_no_pytorch_name_is_spelled_in_the_analysis_or_the_fixer():
    """The catalog has one door: a name PyTorch defines (`step`, `load_state_dict`, `torch.nn.`) is
    read from catalog.py, never written as a literal in analysis/ or fixer/ (docstrings apart)."""
    import builtins

    known = _catalog_names() - set(dir(builtins)) - {"optimizer"}  # a word of the messages, too
    spelled = []
    for folder in ("analysis", "planning", "fixer"):
        for path in sorted((ANALYSIS.parent / folder).glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                          if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                          and node.body and isinstance(node.body[0], ast.Expr)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                    text = node.value.strip("._")
                    if text in known or text.split(".")[0] == "torch":
                        spelled.append(f"{folder}/{path.name}:{node.lineno} {node.value!r}")
    assert not spelled, spelled
