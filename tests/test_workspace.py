"""The workspace layer: which files a run checks and which configuration governs each, the same for
the CLI, the flake8 plugin and `verify` (each case here failed before the layer existed)."""
import json
import os
import subprocess
import sys

import pytest

from cli_run import run

SEED = "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.cuda()\n"


def checked(capsys, *args):
    code, out, err = run(capsys, "--no-cache", "--output-format", "json", *args)
    data = json.loads(out)
    return code, sorted({f["path"] for f in data["findings"]}), data


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path, text=SEED):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ----- files -------------------------------------------------------------------------------------------


def test_gitignored_files_are_not_checked(cwd, capsys):
    subprocess.run(["git", "init", "-q", str(cwd)], check=True)
    write(cwd / ".gitignore", "generated/\n*_tmp.py\n!keep_tmp.py\n")
    write(cwd / "train.py")
    write(cwd / "generated" / "copy.py")
    write(cwd / "scratch_tmp.py")
    write(cwd / "keep_tmp.py")
    write(cwd / "sub" / ".gitignore", "local.py\n")
    write(cwd / "sub" / "local.py")
    write(cwd / "sub" / "kept.py")
    _, paths, _ = checked(capsys, ".")
    assert paths == ["./keep_tmp.py", "./sub/kept.py", "./train.py"]
    _, paths, _ = checked(capsys, "--no-respect-gitignore", ".")
    assert "./generated/copy.py" in paths and "./sub/local.py" in paths


def test_gitignore_of_the_repository_applies_when_checking_a_subfolder(cwd, capsys):
    subprocess.run(["git", "init", "-q", str(cwd)], check=True)
    write(cwd / ".gitignore", "out/\n")
    write(cwd / "pkg" / "out" / "a.py")
    write(cwd / "pkg" / "b.py")
    _, paths, _ = checked(capsys, "pkg")
    assert paths == ["pkg/b.py"]


def test_build_and_egg_info_after_pip_install_are_not_checked(cwd, capsys):
    """The README's `pip install .` leaves build/lib and *.egg-info beside the sources."""
    write(cwd / "pkg" / "train.py")
    write(cwd / "build" / "lib" / "pkg" / "train.py")
    write(cwd / "pkg.egg-info" / "x.py")
    write(cwd / "dist" / "y.py")
    _, paths, _ = checked(capsys, ".")
    assert paths == ["./pkg/train.py"]


def test_named_files_are_checked_unless_force_exclude(cwd, capsys):
    """pre-commit names every staged file: with force-exclude the exclusions apply to them too."""
    write(cwd / "pyproject.toml", '[tool.ddp-lint]\nextend-exclude = ["gen_*.py"]\n')
    write(cwd / "gen_a.py")
    _, paths, _ = checked(capsys, "gen_a.py")
    assert paths == ["gen_a.py"]
    code, paths, _ = checked(capsys, "--force-exclude", "gen_a.py")
    assert code == 0 and paths == []


def test_unreadable_directory_is_one_line_and_exit_2(cwd, capsys, monkeypatch):
    write(cwd / "ok" / "a.py")
    locked = cwd / "locked"
    write(locked / "b.py")
    real = os.scandir

    def scandir(path="."):
        if os.path.abspath(os.fspath(path)) == str(locked):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)  # the tests run as root, which chmod cannot stop
    code, out, err = run(capsys, "--no-cache", ".")
    assert code == 2
    errors = [line for line in out.splitlines() if ": error: " in line]
    assert errors == ["./locked: error: cannot read directory: permission denied"]
    assert "./ok/a.py:3:1: DDP101" in out


def test_exclude_and_per_file_ignores_read_a_glob_the_same_way(cwd, capsys):
    for name in ("sub/a.py", "sub/deep/b.py", "c.py", "other/sub/d.py"):
        write(cwd / name)
    for pattern in ("sub/*.py", "sub/**", "sub", "*.py", "/c.py", "deep/"):
        _, all_paths, _ = checked(capsys, "--isolated", ".")
        _, kept, _ = checked(capsys, "--isolated", "--extend-exclude", pattern, ".")
        excluded = set(all_paths) - set(kept)
        write(cwd / "pyproject.toml", f'[tool.ddp-lint]\nper-file-ignores = {{ "{pattern}" = ["DDP"] }}\n')
        _, reported, _ = checked(capsys, ".")
        (cwd / "pyproject.toml").unlink()
        ignored = set(all_paths) - set(reported)
        assert excluded == ignored, pattern
        assert excluded, pattern


# ----- configuration -----------------------------------------------------------------------------------


def test_a_pyproject_that_only_mentions_ddp_lint_does_not_hide_the_real_configuration(cwd, capsys):
    write(cwd / "pyproject.toml", '[tool.ddp-lint]\nignore = ["DDP101"]\n')
    write(cwd / "pkg" / "pyproject.toml", '[project]\nname = "pkg"\ndependencies = ["ddp-lint"]\n')
    write(cwd / "pkg" / "train.py")
    code, paths, _ = checked(capsys, "pkg")
    assert code == 0 and paths == []


def test_each_file_gets_the_configuration_nearest_to_it(cwd, capsys):
    write(cwd / "pyproject.toml", '[tool.ddp-lint]\nselect = ["DDP1"]\n')
    write(cwd / "quiet" / "ddp-lint.toml", 'ignore = ["DDP101"]\n')
    write(cwd / "a.py")
    write(cwd / "quiet" / "b.py")
    _, paths, _ = checked(capsys, "quiet/b.py", "a.py")  # the first path used to decide for all
    assert paths == ["a.py"]
    _, paths, _ = checked(capsys, "a.py", "quiet/b.py")
    assert paths == ["a.py"]


def test_verify_reads_the_configuration_that_governs_the_script(cwd):
    from ddp_lint.runtime.verify import _static_tools

    script = write(cwd / "train.py")
    lint, _ = _static_tools(str(script))
    assert [f.code for f in lint(SEED, str(script))] == ["DDP101"]
    write(cwd / "pyproject.toml", '[tool.ddp-lint]\nignore = ["DDP101"]\n')
    lint, _ = _static_tools(str(script))
    assert lint(SEED, str(script)) == []


@pytest.mark.parametrize("args", [
    ["--select", "DDP9"], ["--select", "DDP1011"], ["--select", ""], ["--ignore", "NOPE"],
    ["--extend-select", "DDP3"], ["--select", "ddp1"],
])
def test_a_selector_that_selects_no_rule_is_a_usage_error(cwd, capsys, args):
    write(cwd / "a.py")
    code, out, err = run(capsys, "--no-cache", *args, "a.py")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "unknown rule selector" in err or "empty rule selector" in err


@pytest.mark.parametrize("table", [
    'select = ["NOPE"]', 'select = ["ddp1"]', 'select = ["DDP101 "]', 'ignore = ["DDP9"]',
    'extend-select = ["X"]', 'per-file-ignores = { "a.py" = ["DDP1011"] }',
])
def test_a_configured_selector_that_selects_no_rule_is_a_configuration_error(cwd, capsys, table):
    write(cwd / "pyproject.toml", f"[tool.ddp-lint]\n{table}\n")
    write(cwd / "a.py")
    code, out, err = run(capsys, "--no-cache", "a.py")
    assert code == 2 and err.startswith("ddp-lint: configuration error: ") and err.count("\n") == 1
    assert "pyproject.toml" in err


def test_selectors_in_the_documented_forms_still_work(cwd, capsys):
    write(cwd / "a.py")
    for args in (["--select", "DDP101"], ["--select", "DDP1,DDP0"], ["--select", "ALL"], ["--select", "DDP101, DDP002"]):
        code, paths, _ = checked(capsys, *args, "a.py")
        assert code == 1 and paths == ["a.py"], args


# ----- stdin -------------------------------------------------------------------------------------------


def test_stdin_filename_alone_reads_stdin_and_never_rewrites_the_folder(cwd):
    other = write(cwd / "other.py")
    done = subprocess.run(
        [sys.executable, "-m", "ddp_lint.cli", "--fix", "--stdin-filename", "buf.py"],
        input=SEED, capture_output=True, text=True, cwd=cwd, timeout=120,
    )
    assert other.read_text() == SEED  # it used to rewrite every file in the folder
    assert done.stdout.startswith("import torch\nmodel = Net()\nmodel.cuda()\n"), done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "ddp_lint.cli", "--no-cache", "--output-format", "concise", "--stdin-filename",
         "buf.py"], input=SEED, capture_output=True, text=True, cwd=cwd, timeout=120,
    )
    assert done.returncode == 1 and done.stdout.startswith("buf.py:3:1: DDP101 ")
    assert "other.py" not in done.stdout


# ----- input that could crash the parser ---------------------------------------------------------------


def test_deep_nesting_is_one_line_and_the_other_files_keep_their_findings(cwd):
    write(cwd / "deep.py", SEED + "y = " + "(" * 1500 + "1" + ")" * 1500 + "\n")
    write(cwd / "sum.py", "import torch\nx = " + "+".join(["1"] * 20000) + "\n" + SEED)
    write(cwd / "a.py")
    done = subprocess.run([sys.executable, "-m", "ddp_lint.cli", "--no-cache", "-j", "1", "."],
                          capture_output=True, text=True, cwd=cwd, timeout=300)
    assert done.returncode == 2, done.stderr  # it was a segfault (139) with no output at all
    assert "./a.py:3:1: DDP101" in done.stdout
    errors = sorted(line for line in done.stdout.splitlines() if ": error: " in line)
    assert len(errors) == 2 and errors[0].startswith("./deep.py: error: syntax error at line 5")
    assert errors[1] == "./sum.py: error: file too deeply nested to parse (Python's own parser refuses it)"


def test_nesting_python_rejects_is_exit_2_and_never_fixed(cwd, capsys):
    text = "y = " + "(" * 1000 + "1" + ")" * 1000 + "\n" + SEED
    path = write(cwd / "nested.py", text)
    code, out, _ = run(capsys, "--no-cache", "nested.py")
    assert code == 2 and "DDP101" not in out and "too many nested parentheses" in out
    code, out, _ = run(capsys, "--fix", "nested.py")
    assert code == 2 and path.read_text() == text


def test_a_folder_named_explicitly_is_walked_even_when_excluded_or_ignored(cwd, capsys):
    subprocess.run(["git", "init", "-q", str(cwd)], check=True)
    write(cwd / ".gitignore", "_work/\n")
    write(cwd / "_work" / "pkg" / "a.py")
    write(cwd / "_work" / "pkg" / "build" / "b.py")
    write(cwd / "build" / "lib" / "c.py")
    _, paths, _ = checked(capsys, ".")
    assert paths == []
    _, paths, _ = checked(capsys, "_work")
    assert paths == ["_work/pkg/a.py"]  # inside it, `build` is still excluded
    _, paths, _ = checked(capsys, "build")
    assert paths == ["build/lib/c.py"]


# ----- files that are not regular files ---------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
def test_a_named_pipe_in_a_folder_is_skipped_and_never_read(cwd):
    os.mkfifo(cwd / "pipe.py")  # reading it would block forever: nobody writes to it
    write(cwd / "a.py")
    done = subprocess.run([sys.executable, "-m", "ddp_lint.cli", "--no-cache", "-j", "1", "--output-format", "concise", "."],
                          capture_output=True, text=True, cwd=cwd, timeout=30)
    assert done.returncode == 1, done.stderr
    assert "a.py:3:1: DDP101" in done.stdout and "pipe.py" not in done.stdout + done.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
def test_a_named_pipe_named_on_the_command_line_is_one_line_and_exit_2(cwd):
    os.mkfifo(cwd / "pipe.py")
    write(cwd / "a.py")
    done = subprocess.run([sys.executable, "-m", "ddp_lint.cli", "--no-cache", "-j", "1", "--output-format", "concise",
                           "pipe.py", "a.py"], capture_output=True, text=True, cwd=cwd, timeout=30)
    assert done.returncode == 2, done.stderr
    assert "a.py:3:1: DDP101" in done.stdout
    assert [line for line in done.stdout.splitlines() if "pipe.py" in line] == \
        ["pipe.py: error: not a regular file (a named pipe); ddp-lint reads only files"]


def test_read_source_refuses_what_is_not_a_regular_file(tmp_path):
    from ddp_lint.documents.python import InputError, read_source

    with pytest.raises(InputError, match="not a regular file"):
        read_source("/dev/null")
