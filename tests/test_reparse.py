"""`parsing.Reparser` must give the tree and node positions that parsing the whole text gives.

The language server parses each new version of a buffer through one Reparser, which parses again
only the top-level statements whose text changed. Checked here: every fixture, layouts where cutting
a text into statements could go wrong (comments and blank lines between statements, indented
comments after a block, decorators, a header, CRLF, lone CR, mixed indentation, no trailing newline,
a form feed), and random edit sequences on one Reparser (hypothesis), each version compared with a
fresh whole parse: equal trees, equal code, equal positions for every node.
"""
import os
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import given, settings, strategies as st

from ddp_lint.analysis.positions import Positions
from ddp_lint.documents.python import InputError
from ddp_lint.engine import analyse_source
from ddp_lint.parsing import Reparser, parse

# 60 in CI (~3 s); a soak: DDP_LINT_REPARSE_EXAMPLES=2000 python -m pytest tests/test_reparse.py -k successive
EXAMPLES = int(os.environ.get("DDP_LINT_REPARSE_EXAMPLES", "60"))
FIXTURES = sorted((Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py"))


def assert_same_as_whole(reparser: Reparser, text: str) -> None:
    module, positions = reparser.parse(text)
    whole = parse(text)
    assert module.code == whole.code  # == text, but where LibCST itself drops a form feed
    assert module.deep_equals(whole), "the composed tree differs from the whole parse"
    for attribute in ("default_indent", "default_newline", "has_trailing_newline", "encoding"):
        assert getattr(module, attribute) == getattr(whole, attribute), attribute
    expected = Positions(whole)
    count = 0
    pending = [(module, whole)]
    while pending:
        mine, theirs = pending.pop()
        assert positions[mine] == expected[theirs], f"{type(mine).__name__} at {expected[theirs]}"
        count += 1
        pending.extend(zip(mine.children, theirs.children))
    assert len(positions) == len(expected) == count
    nodes = list(_nodes(module))
    assert len({id(node) for node in nodes}) == len(nodes), "a node object in two places"
    assert set(positions) == set(nodes)


def _nodes(module: cst.Module):
    pending = [module]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(node.children)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_parsed_in_chunks_equals_whole(path):
    assert_same_as_whole(Reparser(), path.read_text())


LAYOUTS = {
    "blank_lines_and_comments_between": "import torch\n\n\n# about f\n\ndef f():\n    return 1\n\n\n# trailing\n",
    "indented_comments_after_block": "def f():\n    x = 1\n    # still f's\n  # less indented\n# g's\n\ndef g():\n    pass\n",
    "decorators_with_comments": "@a\n# between\n@b(1,\n  2)\nclass C:\n    pass\n@c\ndef f(): pass\n",
    "header_and_cookie": "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\n\"\"\"Doc.\"\"\"\nimport os\n",
    "crlf": "import torch\r\n\r\ndef f():\r\n    m.cuda()\r\n\r\nopt = 1\r\n",
    "lone_cr": "x = 1\ry = 2\r",
    "mixed_indentation": "def f():\n  return 1\n\ndef g():\n    return 2\n\ndef h():\n\treturn 3\n",
    "first_block_inline": "if x: y = 1\ndef f():\n   return 1\nclass C:\n   pass\n",
    "no_trailing_newline": "import torch\n\ndef f():\n    return 1",
    "trailing_comment_no_newline": "x = 1\n# end",
    "semicolons": "a = 1; b = 2\nif a: b = 3\nelse: b = 4\nc = 5;\n",
    "continuations": "x = 1 + \\\n    2\ny = [\n1,\n]\nz = '''a\nb'''\n",
    "form_feed": "x = 1\n\x0cdef f():\n    pass\n",
    "only_comments": "# a\n\n# b\n",
    "empty": "",
    "whitespace_lines": "def f():\n    x = 1\n    \n\n   \ny = 2\n",
    "else_block_after_inline_body": "if x: pass\nelse:\n        y = 1\ndef f():\n    return 1\n",
    "main_guard": "def main():\n    pass\n\n\nif __name__ == '__main__':\n    main()\n",
    "backslash_line_between": "x = 1\n\\\ny = 2\n",
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layout_parsed_in_chunks_equals_whole(name):
    assert_same_as_whole(Reparser(), LAYOUTS[name])


def test_unchanged_statements_are_not_parsed_again():
    reparser = Reparser()
    text = "".join(f"def f{i}(m):\n    m.cuda()\n    return m\n\n\n" for i in range(30))
    reparser.parse(text)
    assert (reparser.parsed, reparser.reused) == (30, 0)
    edited = text.replace("def f7(m):\n    m.cuda()", "def f7(m):\n    m.cpu()\n    m.cuda()")
    assert_same_as_whole(reparser, edited)
    assert (reparser.parsed, reparser.reused) == (1, 29)


def test_a_syntax_error_reads_as_the_whole_parse_says():
    text = "def f():\n    return 1\n\ndef g(:\n    pass\n"
    with pytest.raises(InputError) as whole:
        parse(text)
    with pytest.raises(InputError) as chunked:
        Reparser().parse(text)
    assert str(chunked.value) == str(whole.value)


def test_engine_findings_the_same_through_a_reparser():
    text = next(p for p in FIXTURES if p.parent.name == "DDP101").read_text()
    reparser = Reparser()
    for version in (text, text.replace("\n\n", "\n\n# edited\n", 1), text):
        whole = analyse_source(version, "train.py")
        chunked = analyse_source(version, "train.py", reparser=reparser)
        assert whole.findings, "the fixture should have findings"
        assert [_seen(d) for d in chunked.findings] == [_seen(d) for d in whole.findings]


def _seen(d):
    return (d.line, d.column, d.end_line, d.end_column, d.code, d.message, d.related)


_PIECES = [
    "import torch\n",
    "model = Net()\n",
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
    "model.cuda()\n",
    "def train(model):\n    opt = torch.optim.Adam(model.parameters())\n    model.to('cuda')\n    return opt\n",
    "def f():\n  return 1\n",
    "def g():\n\tif x:\n\t\treturn 2\n",
    "@decorator\nclass C:\n    def m(self):\n        pass\n    # inside C\n",
    "if x: y = 1\nelse:\n    y = 2\n",
    "s = '''a\n\nb'''\n",
    "a = 1; b = 2\n",
    "for i in range(3):\n    pass\n        # deeper comment\n",
]
_GAPS = ["", "\n", "\n\n", "# comment\n", "\n# comment\n\n", "    # indented comment\n", "   \n", "\t\n"]


@st.composite
def _programs(draw):
    parts = draw(st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from(_GAPS)), min_size=1, max_size=8))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    trailing = draw(st.booleans())
    text = "".join(piece + gap for piece, gap in parts)
    if not trailing:
        text = text.rstrip("\n")
    return text.replace("\n", newline)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(_programs(), min_size=2, max_size=5))
def test_successive_versions_through_one_reparser(versions):
    reparser = Reparser()
    for text in versions:
        try:
            parse(text)
        except InputError:
            continue  # a piece cut off by a missing newline, say: not the subject here
        assert_same_as_whole(reparser, text)
