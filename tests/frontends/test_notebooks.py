"""Notebooks through the real CLI: cell positions, IPython syntax, --fix that touches only code-cell sources."""
import json
import shutil

import nbformat
import pytest

from ddp_lint.pipeline import process
from ddp_lint.settings import Settings

from .conftest import NOTEBOOKS


def notebook(*cells, metadata=None):
    """A notebook document; a cell is ("code"|"markdown", source) with source a string or list of lines."""
    built = []
    for number, (kind, source) in enumerate(cells, start=1):
        cell = {"cell_type": kind, "id": f"c{number}", "metadata": {}, "source": source}
        if kind == "code":
            cell.update(execution_count=number, outputs=[])
        built.append(cell)
    return {
        "cells": built,
        "metadata": metadata if metadata is not None else {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write(path, document, **dump):
    text = json.dumps(document, **({"indent": 1, "ensure_ascii": False} | dump))
    path.write_text(text + ("\n" if dump.get("indent", 1) is not None else ""), encoding="utf-8")
    return path


def check(path, mode="check", unsafe=False, from_stdin=False):
    raw = path.read_bytes() if from_stdin else None
    return process(str(path), Settings(), mode=mode, unsafe=unsafe, raw=raw)


def test_optimizer_in_cell_3_and_move_in_cell_5_is_one_finding_with_cell_positions(ddp_lint_json):
    code, document = ddp_lint_json("fixtures/notebooks/cross_cell.ipynb")
    assert code == 1
    (finding,) = document["findings"]
    assert finding["path"] == "fixtures/notebooks/cross_cell.ipynb"
    assert (finding["code"], finding["cell"], finding["line"], finding["column"]) == ("DDP101", 3, 3, 1)
    assert finding["end_line"] == 3
    assert finding["related"] == [{
        "path": "fixtures/notebooks/cross_cell.ipynb", "line": 1, "column": 1, "role": "placement",
        "message": "`model.cuda()`", "cell": 5,
    }]
    # the message names the cell a reader sees, not a line of the joined program
    assert "`model.cuda()` on line 1 of cell 5" in finding["message"]
    assert finding["fix"]["available"] and "edit" not in finding["fix"]
    assert finding["fix"]["message"] == "move the optimizer after line 1 of cell 5"


def test_text_output_names_the_cell(ddp_lint):
    done = ddp_lint("check", "--no-cache", "fixtures/notebooks/cross_cell.ipynb")
    assert done.stdout.splitlines()[0].startswith("fixtures/notebooks/cross_cell.ipynb:cell 3:3:1: DDP101 ")
    assert "  --> fixtures/notebooks/cross_cell.ipynb:cell 5:1:1: placement: `model.cuda()`" in done.stdout


def test_magics_shell_and_help_lines_do_not_break_parsing(ddp_lint_json):
    code, document = ddp_lint_json("fixtures/notebooks/magics.ipynb")
    assert code == 1 and document["errors"] == []
    (finding,) = document["findings"]
    assert (finding["cell"], finding["line"], finding["code"]) == (4, 5, "DDP101")  # under %%time, after `% 3)`
    assert [(r["cell"], r["line"]) for r in finding["related"]] == [(4, 7), (5, 3)]


def test_clean_notebook_and_non_python_kernel_have_no_findings(tmp_path, ddp_lint_json):
    r_notebook = notebook(("code", "optimizer = optim(model)\nmodel.cuda()\n!ls"),
                          metadata={"kernelspec": {"language": "R", "name": "ir"}})
    write(tmp_path / "r.ipynb", r_notebook)
    shutil.copy(NOTEBOOKS / "clean.ipynb", tmp_path / "clean.ipynb")
    code, document = ddp_lint_json(".", cwd=tmp_path)
    assert code == 0 and document["findings"] == [] and document["errors"] == []


def test_broken_notebook_json_is_one_error_line_and_exit_2(ddp_lint):
    done = ddp_lint("check", "--no-cache", "fixtures/notebooks/broken.ipynb")
    assert done.returncode == 2
    errors = [line for line in done.stdout.splitlines() if "broken.ipynb" in line]
    assert errors == ["fixtures/notebooks/broken.ipynb: error: invalid notebook JSON: Expecting value at line 6, column 1"]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "text, message",
    [
        ("[1, 2]", "invalid notebook JSON: the top level is not an object"),
        ('{"metadata": {}}', "invalid notebook JSON: no `cells` list"),
        ('{"cells": [{"cell_type": "code", "source": 3}]}', "cell 1 `source` is not a string or a list of strings"),
        ('{"worksheets": [], "nbformat": 3}', "nbformat 3 notebooks are not supported"),
    ],
)
def test_malformed_notebooks_are_one_line_errors(tmp_path, text, message):
    path = tmp_path / "bad.ipynb"
    path.write_text(text)
    report = check(path)
    assert message in report.error and "\n" not in report.error


def test_syntax_error_names_the_cell(tmp_path):
    path = write(tmp_path / "nb.ipynb", notebook(
        ("code", "import torch\nopt = torch.optim.SGD(model.parameters())"), ("markdown", "x"), ("code", "x = 1\ndef (:\n"),
        ("code", "model.cuda()"),
    ))
    report = check(path)
    assert report.error.startswith("syntax error at line 2 of cell 3"), report.error


def test_fix_rewrites_only_code_cell_sources_and_keeps_the_json_formatting(tmp_path, ddp_lint):
    path = tmp_path / "cross_cell.ipynb"
    shutil.copy(NOTEBOOKS / "cross_cell.ipynb", path)
    done = ddp_lint("check", "--no-cache", "--fix", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(1 fixed, 0 remaining)" in done.stdout
    # byte for byte: outputs, metadata, ids, key order, indent, non-ASCII text and the final newline kept
    assert path.read_bytes() == (NOTEBOOKS / "cross_cell.fixed.ipynb").read_bytes()
    before = json.loads((NOTEBOOKS / "cross_cell.ipynb").read_text(encoding="utf-8"))
    after = json.loads(path.read_text(encoding="utf-8"))
    for old, new in zip(before["cells"], after["cells"]):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
    assert "".join(after["cells"][4]["source"]).splitlines()[:3] == [
        "model.cuda()", "# plain SGD is enough here", "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
    ]
    assert ddp_lint("check", "--no-cache", str(path)).returncode == 0
    nbformat.validate(nbformat.read(str(path), as_version=4))  # still a valid notebook for Jupyter's own reader


@pytest.mark.parametrize(
    "dump",
    [{"indent": 2, "ensure_ascii": True}, {"indent": 4, "ensure_ascii": False, "sort_keys": True}, {"indent": None}],
    ids=["indent2-ascii", "indent4-sorted", "one-line"],
)
@pytest.mark.parametrize("as_list", [True, False], ids=["list-sources", "string-sources"])
def test_fix_keeps_other_json_styles(tmp_path, dump, as_list):
    def source(text):
        return text.splitlines(keepends=True) if as_list else text

    cells = [
        ("code", source("import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n")),
        ("markdown", source("# Überschrift — naïve café\n")),
        ("code", source("model.cuda()")),
    ]
    document = notebook(*cells)
    path = write(tmp_path / "nb.ipynb", document, **dump)
    report = check(path, mode="fix")
    assert report.error is None and report.fixed == 1
    fixed = [("code", source("import torch\nmodel = Net()\n")), cells[1],
             ("code", source("model.cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)"))]
    expected = notebook(*fixed)
    text = json.dumps(expected, **({"indent": 1, "ensure_ascii": False} | dump))
    assert path.read_text(encoding="utf-8") == text + ("\n" if dump.get("indent", 1) is not None else "")


def test_fix_restores_magic_lines_and_diff_leaves_the_file_alone(tmp_path, ddp_lint):
    path = tmp_path / "magics.ipynb"
    shutil.copy(NOTEBOOKS / "magics.ipynb", path)
    original = path.read_text(encoding="utf-8")
    done = ddp_lint("check", "--no-cache", "--diff", str(path))
    assert done.returncode == 1 and path.read_text(encoding="utf-8") == original
    assert '-    "opt = torch.optim.Adam(model.parameters())\\n",' in done.stdout
    assert ddp_lint("check", "--no-cache", "--fix", str(path)).returncode == 0
    before = json.loads(original)
    after = json.loads(path.read_text(encoding="utf-8"))

    def lines(doc):
        return [line for cell in doc["cells"] for line in "".join(cell["source"]).splitlines()]

    magic = [line for line in lines(before) if line.lstrip().startswith(("%", "!")) or line.endswith("?")]
    assert len(magic) >= 8
    assert [line for line in lines(after) if line in magic] == magic  # every IPython line kept, in order
    assert sorted(lines(before)) == sorted(lines(after))  # the fix moved a line, nothing more


def test_fix_never_moves_an_optimizer_past_a_magic_that_uses_it(tmp_path):
    path = write(tmp_path / "nb.ipynb", notebook(
        ("code", "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)"),
        ("code", "!echo {opt}\nmodel.cuda()"),
    ))
    original = path.read_bytes()
    report = check(path, mode="fix")
    assert report.fixed == 0 and path.read_bytes() == original
    (finding,) = report.findings
    assert "no automatic fix: line 1 of cell 2 reads `opt`" in finding.message


def test_time_magic_is_analysed_as_the_python_it_runs(tmp_path):
    path = write(tmp_path / "nb.ipynb", notebook(
        ("code", "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)"),
        ("markdown", "timing"),
        ("code", "%time model.half()"),
    ))
    (finding,) = check(path).findings
    assert (finding.cell, finding.line, finding.related[0].cell, finding.related[0].line) == (1, 3, 3, 1)


def test_expression_continued_with_percent_is_not_a_magic(tmp_path):
    path = write(tmp_path / "nb.ipynb", notebook(("code", "x = (10\n     % 3)\ny = 'a' \\\n    '%b'\n")))
    report = check(path)
    assert report.error is None and report.findings == []


def test_fix_of_stdin_notebook_is_returned_not_written(tmp_path):
    path = tmp_path / "nb.ipynb"
    shutil.copy(NOTEBOOKS / "cross_cell.ipynb", path)
    original = path.read_bytes()
    report = check(path, mode="fix", from_stdin=True)
    assert report.fixed == 1 and path.read_bytes() == original
    assert report.output == (NOTEBOOKS / "cross_cell.fixed.ipynb").read_text(encoding="utf-8")
