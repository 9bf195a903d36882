"""The `ddp-lint` command: output format, ordering, selection, noqa, exit codes and bad input."""
import json
import os
import subprocess
import sys

import pytest

from cli_run import run

SEED = """import torch

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.cuda()
"""
CLEAN = """import torch

model = Net().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.py").write_text(SEED)
    (tmp_path / "a.py").write_text(SEED + "\nopt2 = torch.optim.Adagrad(model.parameters())\nmodel.half()\n")
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_text_output_is_sorted_flake8_style_with_related_location(tree, capsys):
    code, out, _ = run(capsys, "--no-cache", ".")
    lines = [l for l in out.splitlines() if not l.startswith("  ") and ": DDP" in l]
    assert code == 1
    assert lines[0].startswith("./a.py:4:1: DDP101 ")
    assert lines[1].startswith("./a.py:7:1: DDP002 ")
    assert lines[2].startswith("./b.py:4:1: DDP101 ")
    assert "  --> ./a.py:5:1: placement: `model.cuda()`" in out


def test_json_output_has_the_documented_shape(tree, capsys):
    code, out, _ = run(capsys, "--no-cache", "--output-format", "json", "b.py")
    data = json.loads(out)
    assert code == 1 and data["errors"] == []
    (finding,) = data["findings"]
    assert {k: finding[k] for k in ("path", "line", "column", "end_line", "code", "name", "severity")} == {
        "path": "b.py", "line": 4, "column": 1, "end_line": 4, "code": "DDP101",
        "name": "optimizer-before-move", "severity": "warning",
    }
    assert finding["related"] == [
        {"path": "b.py", "line": 5, "column": 1, "role": "placement", "message": "`model.cuda()`"}
    ]
    assert finding["fix"]["available"] is True and finding["fix"]["applicability"] == "safe"
    assert data["summary"]["findings"] == 1 and data["summary"]["by_code"] == {"DDP101": 1}


def test_clean_file_exits_zero_and_says_so_or_prints_nothing_when_quiet(tree, capsys):
    assert run(capsys, "--no-cache", "clean.py") == (0, "All checks passed!\n", "")
    assert run(capsys, "--no-cache", "-q", "clean.py") == (0, "", "")


def test_exit_zero_keeps_findings_but_returns_zero(tree, capsys):
    code, out, _ = run(capsys, "--no-cache", "--exit-zero", "b.py")
    assert code == 0 and "DDP101" in out


@pytest.mark.parametrize(
    "args,codes",
    [
        (["--select", "DDP0"], {"DDP002"}),
        (["--ignore", "DDP101"], {"DDP002"}),
        (["--select", "ALL"], {"DDP002", "DDP101"}),
        (["--ignore", "DDP1", "--extend-select", "DDP101"], {"DDP002", "DDP101"}),
        (["--select", "DDP101,DDP002"], {"DDP002", "DDP101"}),
    ],
)
def test_selection_options(tree, capsys, args, codes):
    _, out, _ = run(capsys, "--no-cache", "--output-format", "json", *args, "a.py")
    assert {f["code"] for f in json.loads(out)["findings"]} == codes


def test_noqa_bare_and_with_codes(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, comment, expected in [
        ("bare.py", "# noqa", 0),
        ("listed.py", "# noqa: DDP101", 0),
        ("other.py", "# noqa: E501", 1),
        ("lower.py", "# NOQA:ddp101", 0),
    ]:
        path = tmp_path / name
        path.write_text(SEED.replace("lr=0.1)\n", f"lr=0.1)  {comment}\n"))
        code, _, _ = run(capsys, "--no-cache", name)
        assert code == expected, name


def test_exclude_and_skipped_folders(tree, capsys):
    (tree / ".venv").mkdir()
    (tree / ".venv" / "x.py").write_text(SEED)
    (tree / "env").mkdir()
    (tree / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (tree / "env" / "y.py").write_text(SEED)
    (tree / ".git").mkdir()
    (tree / ".git" / "z.py").write_text(SEED)
    _, out, _ = run(capsys, "--no-cache", "--output-format", "json", "--extend-exclude", "a.py", ".")
    assert sorted({f["path"] for f in json.loads(out)["findings"]}) == ["./b.py"]
    # as ruff's: --exclude replaces the default list (.venv among it); version control and
    # virtual environments with a pyvenv.cfg are never walked
    _, out, _ = run(capsys, "--no-cache", "--output-format", "json", "--exclude", "a.py", ".")
    assert sorted({f["path"] for f in json.loads(out)["findings"]}) == ["./.venv/x.py", "./b.py"]


def test_rule_docs_commands(capsys):
    code, out, _ = run(capsys, "rule", "DDP101")
    assert code == 0 and out.startswith("DDP101 optimizer-before-move (warning)") and "## Fix safety" in out
    code, out, _ = run(capsys, "rules")
    assert code == 0 and "DDP001" in out and "DDP201" in out
    code, _, err = run(capsys, "rule", "DDP999")
    assert code == 2 and err.count("\n") == 1


def test_usage_errors_are_one_line_exit_2(capsys):
    for args in (["--bogus"], ["--select", "E501"], ["--output-format", "xml"], ["-j", "0", "."],
                 ["-j", "many", "."]):
        code, out, err = run(capsys, *args)
        assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("ddp-lint: error:"), args


def test_jobs_default_to_one_process_per_usable_cpu(monkeypatch):
    from ddp_lint import cli

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    assert cli._check_parser().parse_args([]).jobs == 3
    assert cli._check_parser().parse_args(["-j", "auto"]).jobs == 3
    assert cli._check_parser().parse_args(["-j", "1"]).jobs == 1


@pytest.mark.parametrize(
    "name,content,message",
    [
        # Files without any placement token are never parsed (the prefilter), so this one names some.
        ("syntax.py", b"import torch.optim\ndef broken(:\n    model.cuda()\n", "syntax error at line 2"),
        ("latin.py", b"x = '\xe9'\n", "not valid utf-8"),
        ("binary.py", b"\x7fELF\x00\x00\x01", "binary file"),
        ("badcookie.py", b"# -*- coding: klingon -*-\nx = 1\n", "encoding"),
    ],
)
def test_bad_input_is_one_error_line_and_others_still_checked(tmp_path, capsys, monkeypatch, name, content, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_bytes(content)
    (tmp_path / "seed.py").write_text(SEED)
    code, out, err = run(capsys, "--no-cache", ".")
    assert code == 2
    error_lines = [l for l in out.splitlines() if ": error: " in l]
    assert len(error_lines) == 1 and message in error_lines[0].lower() and error_lines[0].startswith(f"./{name}")
    assert "./seed.py:4:1: DDP101" in out
    assert "Traceback" not in out + err


def test_unreadable_file_and_symlink_loop(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "up").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "seed.py").write_text(SEED)
    code, out, _ = run(capsys, "--no-cache", "--output-format", "json", ".")
    data = json.loads(out)
    assert code == 2
    assert [e["path"] for e in data["errors"]] == ["./loop.py"]
    assert [f["path"] for f in data["findings"]] == ["./seed.py"]


def test_missing_path_is_an_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "--no-cache", "nope.py")
    assert code == 2 and "nope.py: error: no such file or directory" in out


@pytest.mark.parametrize(
    "raw",
    [
        b"\xef\xbb\xbf" + SEED.encode(),
        SEED.replace("\n", "\r\n").encode(),
        b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + SEED.encode(),
        SEED.replace("model = Net()", "if True:\n\tmodel = Net()").encode(),
        b"# -*- coding: future_fstrings -*-\n" + SEED.encode(),  # the future-fstrings backport's cookie
    ],
    ids=["bom", "crlf", "latin1-cookie", "tabs", "future-fstrings-cookie"],
)
def test_encodings_and_line_endings_are_handled(tmp_path, capsys, monkeypatch, raw):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.py").write_bytes(raw)
    code, out, _ = run(capsys, "--no-cache", "--output-format", "json", "f.py")
    data = json.loads(out)
    assert code == 1 and data["errors"] == [] and [f["code"] for f in data["findings"]] == ["DDP101"]


def test_no_traceback_from_the_installed_command(tmp_path):
    (tmp_path / "bad.py").write_bytes(b"opt = torch.optim.SGD(\nmodel.cuda()\n")
    proc = subprocess.run([sys.executable, "-m", "ddp_lint", "--no-cache", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr + proc.stdout
    assert "syntax error" in proc.stdout


def test_output_order_is_stable_across_jobs(tree, capsys):
    for i in range(6):
        (tree / f"m{i}.py").write_text(SEED)
    _, one, _ = run(capsys, "--no-cache", "-j", "1", ".")
    _, two, _ = run(capsys, "--no-cache", "-j", "2", ".")
    assert one == two and one.count("DDP101") == 8


def test_show_source_prints_the_offending_and_placement_lines(tree, capsys):
    _, out, _ = run(capsys, "--no-cache", "--show-source", "b.py")
    assert "   4 | optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n     | ^" in out
    assert "   5 | model.cuda()" in out
    _, piped, _ = run(capsys, "--no-cache", "b.py")
    assert " | " not in piped


def test_a_folder_without_python_files_says_so_on_stderr(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no code here")
    code, out, err = run(capsys, "--no-cache", "empty")
    assert code == 0 and out.strip() == "All checks passed!"
    assert err.strip() == "ddp-lint: warning: No Python files found under the given path(s)"
