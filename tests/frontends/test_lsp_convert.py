"""The language server's conversions, without a server: findings to LSP positions (UTF-16), a fix as
the smallest edit, `# noqa` comments that stay comments, notebook cells mapped back to their URIs."""
import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.workspace import PositionCodec  # noqa: E402

from ddp_lint.frontends import lsp_convert  # noqa: E402
from ddp_lint.frontends.lsp_documents import Cell, Snapshot, notebook_json  # noqa: E402
from ddp_lint.pipeline import check  # noqa: E402
from ddp_lint.settings import Settings  # noqa: E402

from .conftest import SEED, SEED_FIXED  # noqa: E402

UTF16 = PositionCodec(types.PositionEncodingKind.Utf16)


def apply(text, edit):
    lines = text.splitlines(keepends=True)

    def offset(position):
        return sum(len(line) for line in lines[: position.line]) + position.character

    return text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]


def test_columns_are_counted_in_utf16_units_of_the_line():
    text = ('import torch\nmodel = Net()\n'
            'x = "😀"; optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.cuda()\n')
    snapshot = Snapshot("file:///w/t.py", "/w/t.py", 1, text=text)
    (finding,) = check(snapshot.document(), Settings())
    uri, diagnostic = lsp_convert.diagnostic(finding, snapshot, UTF16)
    assert uri == "file:///w/t.py"
    assert (finding.line, finding.column) == (3, 1) and diagnostic.range.start == types.Position(line=2, character=0)
    assert diagnostic.range.end.character == (finding.end_column - 1) + 1  # the emoji is two UTF-16 units


def test_a_fix_becomes_the_smallest_edit():
    edit = lsp_convert.replacement(SEED, SEED_FIXED, UTF16)
    assert (edit.range.start.line, edit.range.end.line) == (3, 5)
    assert apply(SEED, edit) == SEED_FIXED


@pytest.mark.parametrize("line, expected", [
    ("opt = make(model)\n", "opt = make(model)  # noqa: DDP101\n"),
    ("opt = make(model)   \n", "opt = make(model)  # noqa: DDP101   \n"),
    ("opt = make(model)  # noqa: DDP102\n", "opt = make(model)  # noqa: DDP102, DDP101\n"),
    ("opt = make(model)  # keep\n", "opt = make(model)  # keep  # noqa: DDP101\n"),
    ("opt = make(\n    model)\n", "opt = make(  # noqa: DDP101\n    model)\n"),
])
def test_noqa_goes_at_the_end_of_the_reported_line(line, expected):
    edit = lsp_convert.noqa_edit(line, 1, "DDP101", UTF16)
    assert apply(line, edit) == expected


@pytest.mark.parametrize("text, expected", [
    # the comment would land inside the string: it goes where the string ends, where it is read
    ('opt = make("""\ntext""", model)\n', 'opt = make("""\ntext""", model)  # noqa: DDP101\n'),
    # after a backslash continuation: at the end of the continued line
    ("opt = make(model) \\\n    .cuda()\n", "opt = make(model) \\\n    .cuda()  # noqa: DDP101\n"),
])
def test_noqa_goes_where_the_line_can_end_with_a_comment(text, expected):
    assert apply(text, lsp_convert.noqa_edit(text, 1, "DDP101", UTF16)) == expected


def test_noqa_is_not_offered_where_a_comment_already_silences_every_code():
    assert lsp_convert.noqa_edit("opt = make(model)  # noqa\n", 1, "DDP101", UTF16) is None


def test_notebook_findings_land_on_their_cells_and_a_fix_comes_back_per_cell():
    cells = (Cell("c1", 1, True, "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)"),
             Cell("c2", 1, False, "# Move it"), Cell("c3", 1, True, "model.cuda()"))
    snapshot = Snapshot("nb", "/w/nb.ipynb", 1, cells=cells)
    (finding,) = check(snapshot.document(), Settings())
    found = lsp_convert.diagnostics_by_uri([finding], snapshot, UTF16)
    assert [len(found[uri]) for uri in ("c1", "c2", "c3")] == [1, 0, 0]
    (diagnostic,) = found["c1"]
    assert diagnostic.range.start.line == 2 and diagnostic.related_information[0].location.uri == "c3"
    fixed = notebook_json((Cell("c1", 1, True, "import torch\nmodel = Net()"), cells[1], cells[2]))
    assert snapshot.changed_cells(fixed) == {"c1": "import torch\nmodel = Net()"}
