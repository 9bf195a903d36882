"""`analysis.positions.Positions` must give every node exactly the range LibCST's PositionProvider gives.

Checked over every fixture and over texts that exercise what the codegen state tracks by itself:
line endings (\\n, \\r\\n, lone \\r), indentation tokens, decorators, async, continuation lines, a
missing trailing newline and an empty file.
"""
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from ddp_lint.analysis import positions as positions_module
from ddp_lint.analysis.positions import Positions

FIXTURES = sorted((Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py"))

TRICKY = {
    "crlf": "import torch\r\nopt = torch.optim.SGD(m.parameters())\r\nm.cuda()\r\n",
    "lone_cr": "x = 1\ry = (2,\r     3)\r",
    "no_trailing_newline": "def f():\n    return 1",
    "empty": "",
    "only_comments": "# a\n\n# b\n",
    "decorated_async": "@a\n@b.c(1)\nasync def f(x):\n    async with y as z:\n        await z\n",
    "tabs_and_continuation": "class A:\n\tdef f(self):\n\t\tx = 1 + \\\n\t\t    2\n\t\treturn [\n\t\t\tx,\n\t\t]\n",
    "strings_with_newlines": 's = """a\nb\r\nc"""\nt = f"{s!r}\\n"\nu = 3\n',
    "semicolons": "a = 1; b = 2;\nif a: b = 3\nelse: b = 4\n",
}


def _expected(module: cst.Module):
    return dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))


def _actual(module: cst.Module):
    positions = Positions(module)
    return {node: positions[node] for node in positions}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_positions_match_libcst_on_fixtures(path: Path) -> None:
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    assert _actual(module) == _expected(module)


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_positions_match_libcst_on_tricky_text(name: str) -> None:
    module = cst.parse_module(TRICKY[name])
    expected = _expected(module)
    assert len(expected) > 0 and _actual(module) == expected


def test_an_unknown_codegen_protocol_falls_back_to_the_metadata_wrapper(monkeypatch) -> None:
    def broken(self, value):
        raise AttributeError("codegen changed")

    monkeypatch.setattr(positions_module._PositionState, "add_token", broken)
    module = cst.parse_module(TRICKY["decorated_async"])
    assert _actual(module) == _expected(module)
