"""`--add-noqa`, as ruff's: a `# noqa: CODE` for every finding, merged into an existing `# noqa:` list
(other tools' codes kept), never inside a string, where `# noqa` is read; written as `--fix` writes
(encoding, line ends, mode; a notebook's cell source in its own JSON style). The round trip (add, a
check finds nothing, add again changes nothing) on every fixture and on two real ecosystem files.
"""
import ast
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from cli_run import REPO, matches_snapshot, run
from ddp_lint.noqa_edits import apply, insertions
from ddp_lint.suppression import unsuppressed

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots" / "formats"
VENDORED = Path(__file__).resolve().parent / "vendored"
DOWNLOADED = REPO / "benchmarks" / "_work" / "ecosystem" / "src"
ECOSYSTEM = {  # vendored copy -> the same file in the downloaded tree
    "segmentation_models_pytorch/train.py":
        "segmentation-models-pytorch_0.6.0/segmentation_models_pytorch/utils/train.py",
    "fairscale/moe.py": "fairscale_0.4.13/fairscale-0.4.13/benchmarks/moe.py",
}
SEED = "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.cuda()\n"


class _Finding:
    def __init__(self, line, code="DDP101"):
        self.line, self.code = line, code


@pytest.mark.parametrize("text, line, expected", [
    ("opt = make(model)\n", 1, "opt = make(model)  # noqa: DDP101\n"),
    ("opt = make(model)   \n", 1, "opt = make(model)  # noqa: DDP101   \n"),
    # another tool's list: its codes kept, in their order, ours after them
    ("opt = make(model)  # noqa: E501\n", 1, "opt = make(model)  # noqa: E501, DDP101\n"),
    ("opt = make(model)  # noqa:E501,W291\n", 1, "opt = make(model)  # noqa:E501,W291, DDP101\n"),
    ("opt = make(model)  # noqa: E501 a long URL\n", 1, "opt = make(model)  # noqa: E501, DDP101 a long URL\n"),
    # a comment that is not a noqa: ours after it
    ("opt = make(model)  # keep\n", 1, "opt = make(model)  # keep  # noqa: DDP101\n"),
    # a `# noqa:` inside a string is not a comment to merge into
    ('opt = make(model, "# noqa: E501")\n', 1, 'opt = make(model, "# noqa: E501")  # noqa: DDP101\n'),
    # a statement over several lines in brackets: the first line can end with a comment
    ("opt = make(\n    model)\n", 1, "opt = make(  # noqa: DDP101\n    model)\n"),
    # the first line ends inside a string: at the end of the string's last line, where it is read
    ('opt = make("""\ntext""", model)\n', 1, 'opt = make("""\ntext""", model)  # noqa: DDP101\n'),
    ("opt = make(f'''\n{x}\n''', model)\n", 1, "opt = make(f'''\n{x}\n''', model)  # noqa: DDP101\n"),
    ('opt = make("a\\\nb", model)\n', 1, 'opt = make("a\\\nb", model)  # noqa: DDP101\n'),
    # a backslash carries the line on: at the end of the continuation
    ("opt = make(model) \\\n    .cuda()\n", 1, "opt = make(model) \\\n    .cuda()  # noqa: DDP101\n"),
    # line ends kept
    ("x = 1\r\nopt = make(model)\r\ny = 2\r\n", 2, "x = 1\r\nopt = make(model)  # noqa: DDP101\r\ny = 2\r\n"),
    ("opt = make(model)", 1, "opt = make(model)  # noqa: DDP101"),
])
def test_the_comment_goes_where_it_is_read_and_never_into_a_string(text, line, expected):
    edits = insertions(text, [(line, "DDP101")])
    new = apply(text, edits)
    assert new == expected
    assert ast.dump(ast.parse(new)) == ast.dump(ast.parse(text))  # only comments changed
    assert unsuppressed([_Finding(line)], new) == []
    assert insertions(new, [(line, "DDP101")]) == []  # a second time adds nothing


@pytest.mark.parametrize("comment", ["  # noqa", "  # noqa: DDP101", "  # noqa:DDP1", "  # NOQA: ddp101"])
def test_nothing_is_added_where_a_comment_already_silences_the_code(comment):
    assert insertions(f"opt = make(model){comment}\n", [(1, "DDP101")]) == []


def test_several_codes_on_one_line_make_one_comment_in_code_order():
    text = "opt = make(model)\n"
    assert apply(text, insertions(text, [(1, "DDP201"), (1, "DDP101"), (1, "DDP201")])) == (
        "opt = make(model)  # noqa: DDP101, DDP201\n")


def test_suppression_reads_the_end_of_a_string_a_finding_starts_in():
    text = 'opt = make("""\ntext""", model)  # noqa: DDP101\n'
    assert unsuppressed([_Finding(1)], text) == []
    assert unsuppressed([_Finding(1, "DDP002")], text) != []


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_add_noqa_reports_the_count_exits_0_and_a_second_run_adds_nothing(cwd, capsys):
    (cwd / "a.py").write_text(SEED + "opt2 = torch.optim.Adagrad(model.parameters())  # noqa: E501\nmodel.half()\n")
    code, out, err = run(capsys, "--no-cache", "--add-noqa", "--select", "ALL", "a.py")
    assert (code, out, err) == (0, "", "Added 2 noqa directives.\n")
    assert (cwd / "a.py").read_text().splitlines()[2:5] == [
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)  # noqa: DDP101",
        "model.cuda()",
        "opt2 = torch.optim.Adagrad(model.parameters())  # noqa: E501, DDP002",
    ]
    assert run(capsys, "--no-cache", "--select", "ALL", "a.py")[0] == 0
    assert run(capsys, "--no-cache", "--add-noqa", "--select", "ALL", "a.py") == (0, "", "Added 0 noqa directives.\n")
    # --ignore-noqa brings them back
    code, out, _ = run(capsys, "--no-cache", "--ignore-noqa", "--select", "ALL", "--output-format", "concise", "a.py")
    assert code == 1 and out.count("a.py:") == 2


def test_add_noqa_writes_as_fix_does_encoding_line_ends_bom_and_mode(cwd, capsys):
    latin = "# -*- coding: latin-1 -*-\r\n# caf\u00e9\r\n" + SEED.replace("\n", "\r\n")
    (cwd / "latin.py").write_bytes(latin.encode("latin-1"))
    (cwd / "bom.py").write_bytes(b"\xef\xbb\xbf" + SEED.encode())
    os.chmod(cwd / "latin.py", 0o640)
    assert run(capsys, "--no-cache", "--add-noqa", "latin.py", "bom.py")[0] == 0
    assert (cwd / "latin.py").read_bytes() == latin.replace(
        "lr=0.1)", "lr=0.1)  # noqa: DDP101").encode("latin-1")
    assert stat.S_IMODE(os.stat(cwd / "latin.py").st_mode) == 0o640
    assert (cwd / "bom.py").read_bytes() == b"\xef\xbb\xbf" + SEED.replace("lr=0.1)", "lr=0.1)  # noqa: DDP101").encode()


def test_a_read_only_file_is_an_error_and_left_alone(cwd, capsys):
    (cwd / "a.py").write_text(SEED)
    os.chmod(cwd / "a.py", 0o444)
    try:
        code, _, err = run(capsys, "--no-cache", "--add-noqa", "a.py")
    finally:
        os.chmod(cwd / "a.py", 0o644)
    assert code == 2 and "a.py: error: file is read-only; not fixed" in err
    assert (cwd / "a.py").read_text() == SEED


@pytest.mark.parametrize("args, message", [
    (("--fix",), "--add-noqa cannot be used with --fix"),
    (("--diff",), "--add-noqa cannot be used with --diff"),
    (("--ignore-noqa",), "--add-noqa cannot be used with --ignore-noqa"),
    (("-",), "--add-noqa changes files; it cannot read stdin"),
])
def test_add_noqa_refuses_what_it_cannot_do_in_one_line(cwd, capsys, args, message):
    code, out, err = run(capsys, "--add-noqa", *args)
    assert (code, out, err) == (2, "", f"ddp-lint: error: {message}\n")


def _notebook(*cells):
    return {
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
                   "source": source} for i, source in enumerate(cells)],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
    }


def test_notebook_comments_go_into_the_cell_and_the_json_keeps_its_style(cwd, capsys):
    document = _notebook(["import torch\n", "model = Net()\n", "opt = torch.optim.SGD(model.parameters(), lr=0.1)"],
                         "model.cuda()")
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    (cwd / "nb.ipynb").write_text(text)
    assert run(capsys, "--no-cache", "--add-noqa", "nb.ipynb") == (0, "", "Added 1 noqa directive.\n")
    assert (cwd / "nb.ipynb").read_text() == text.replace("lr=0.1)", "lr=0.1)  # noqa: DDP101")
    assert run(capsys, "--no-cache", "nb.ipynb")[0] == 0
    assert run(capsys, "--no-cache", "--add-noqa", "nb.ipynb") == (0, "", "Added 0 noqa directives.\n")


def test_a_finding_on_an_ipython_line_is_said_not_silenced(cwd, capsys):
    document = _notebook("import torch\nmodel = Net()\n%time opt = torch.optim.SGD(model.parameters(), lr=0.1)",
                         "model.cuda()")
    text = json.dumps(document, indent=1)
    (cwd / "nb.ipynb").write_text(text)
    code, _, err = run(capsys, "--no-cache", "--add-noqa", "nb.ipynb")
    assert code == 0 and (cwd / "nb.ipynb").read_text() == text
    assert err.splitlines() == ["nb.ipynb:cell 1:3: warning: no place for `# noqa: DDP101` on this line",
                                "Added 0 noqa directives."]


def _round_trip(capsys, folder: Path, *options: str):
    """Add, check, add again, from `folder`; (the count, the changed lines as `path:line: text`)."""
    before = {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    code, _, err = run(capsys, "--no-cache", "-j", "1", *options, "--add-noqa", str(folder))
    assert code in (0, 2) and "Traceback" not in err
    added = int(err.splitlines()[-1].split()[1])
    after = {p: p.read_bytes() for p in before}
    code, out, _ = run(capsys, "--no-cache", "-j", "1", *options, "--output-format", "json", str(folder))
    assert json.loads(out)["findings"] == []
    code, _, err = run(capsys, "--no-cache", "-j", "1", *options, "--add-noqa", str(folder))
    assert err.splitlines()[-1] == "Added 0 noqa directives."
    assert {p: p.read_bytes() for p in before} == after
    changed = []
    for path, old in before.items():
        if after[path] == old:
            continue
        if path.suffix == ".py":  # only comments changed: the same program
            assert ast.dump(ast.parse(after[path])) == ast.dump(ast.parse(old)), path
        old_lines, new_lines = old.decode().splitlines(), after[path].decode().splitlines()
        assert len(old_lines) == len(new_lines), path
        relative = path.relative_to(folder).as_posix()
        changed += [f"{relative}:{i}: {new}" for i, (o, new) in enumerate(zip(old_lines, new_lines), 1) if o != new]
    return added, changed


def test_round_trip_on_every_fixture(tmp_path, monkeypatch, capsys):
    shutil.copytree(REPO / "fixtures", tmp_path / "fixtures")
    monkeypatch.chdir(tmp_path)
    added, changed = _round_trip(capsys, tmp_path / "fixtures", "--isolated", "--select", "ALL")
    assert added == len(changed) > 150
    matches_snapshot(SNAPSHOTS / "add-noqa.snap", "".join(line + "\n" for line in changed), "--add-noqa's edits")


@pytest.mark.parametrize("name", sorted(ECOSYSTEM))
def test_round_trip_on_real_ecosystem_files(tmp_path, monkeypatch, capsys, name):
    sources = [VENDORED / name] + ([DOWNLOADED / ECOSYSTEM[name]] if (DOWNLOADED / ECOSYSTEM[name]).is_file() else [])
    for number, source in enumerate(sources):
        folder = tmp_path / str(number)
        folder.mkdir()
        shutil.copy(source, folder / source.name)
        monkeypatch.chdir(folder)
        added, changed = _round_trip(capsys, folder, "--isolated", "--select", "ALL")
        assert added == len(changed) >= 1, changed
