"""`--config` as ruff reads it: a configuration file, or `KEY = VALUE` settings in TOML laid over the
configuration that governs (validated as the file's keys are, with the same one-line errors and exit
2), under the command line's own options; and `--extend-ignore`, `--ignore-noqa`."""
import pytest

from cli_run import run

SEED = "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.cuda()\n"
WRAPPED = SEED + "model = torch.nn.parallel.DistributedDataParallel(model)\n"  # DDP101, and DDP201 when selected


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(WRAPPED)
    return tmp_path


def codes(capsys, *args):
    code, out, err = run(capsys, "--no-cache", "--output-format", "concise", *args)
    return code, sorted({line.split(": ")[1].split()[0] for line in out.splitlines() if ".py:" in line}), err


def test_an_inline_setting_extends_the_selection_as_the_file_key_does(cwd, capsys):
    assert codes(capsys, "a.py")[:2] == (1, ["DDP101"])
    assert codes(capsys, "--config", "extend-select = ['DDP201']", "a.py")[:2] == (1, ["DDP101", "DDP201"])
    # repeatable, later settings win per key; the ignore removes what the selection added
    assert codes(capsys, "--config", "extend-select = ['DDP201']", "--config", 'ignore = ["DDP101"]', "a.py")[:2] == (
        1, ["DDP201"])


def test_inline_settings_lie_over_the_configuration_file_and_under_the_options(cwd, capsys):
    (cwd / "pyproject.toml").write_text('[tool.ddp-lint]\nextend-select = ["DDP201"]\nper-file-ignores = {"b.py" = ["DDP1"]}\n')
    (cwd / "b.py").write_text(WRAPPED)
    assert codes(capsys, "a.py", "b.py")[:2] == (1, ["DDP101", "DDP201"])
    # the file's per-file-ignores survive a setting that does not name them
    code, out, _ = run(capsys, "--no-cache", "--output-format", "concise", "--config", "select = ['DDP101']", "a.py", "b.py")
    assert [line.split(": ")[0].split(":")[0] + " " + line.split(": ")[1][:6] for line in out.splitlines()
            if ": DDP" in line] == ["a.py DDP101", "a.py DDP201", "b.py DDP201"]
    # select replaces the file's selection, extend-select adds to the file's
    assert codes(capsys, "--config", "select = ['DDP2']", "a.py")[:2] == (1, ["DDP201"])
    assert codes(capsys, "--config", "extend-select = ['DDP002']", "a.py")[:2] == (1, ["DDP101", "DDP201"])
    # the command line's own option wins over the inline setting (the file's extend-select stays)
    assert codes(capsys, "--config", "select = ['DDP2']", "--select", "DDP101", "a.py")[:2] == (1, ["DDP101", "DDP201"])
    assert codes(capsys, "--config", "select = ['DDP101']", "--select", "DDP2", "--isolated", "a.py")[:2] == (1, ["DDP201"])


def test_a_configuration_file_and_settings_together(cwd, capsys):
    (cwd / "other.toml").write_text('select = ["DDP201"]\n')
    assert codes(capsys, "--config", "other.toml", "a.py")[:2] == (1, ["DDP201"])
    assert codes(capsys, "--config", "other.toml", "--config", "extend-select = ['DDP101']", "a.py")[:2] == (
        1, ["DDP101", "DDP201"])
    # --isolated reads no file, but the settings given here still apply
    assert codes(capsys, "--isolated", "--config", "extend-select = ['DDP201']", "a.py")[:2] == (1, ["DDP101", "DDP201"])


@pytest.mark.parametrize("value, message", [
    ("extend-select = ['DDP9']", "--config: [tool.ddp-lint] extend-select: unknown rule selector 'DDP9': use a code "
                                 "like DDP101, a prefix like DDP1, or ALL"),
    ("select = 'DDP101'", "--config: [tool.ddp-lint] select must be a list of strings"),
    ("colour = true", "--config: unknown key 'colour' in [tool.ddp-lint]"),
    ("project = 'yes'", "--config: [tool.ddp-lint] project must be true or false"),
    ("select = [", "--config 'select = [': invalid TOML: "),
    ("nothing.toml", "nothing.toml: no such file (and not a `KEY = VALUE` setting)"),
])
def test_a_bad_setting_is_a_one_line_configuration_error_exit_2(cwd, capsys, value, message):
    code, out, err = run(capsys, "--no-cache", "--config", value, "a.py")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("ddp-lint: configuration error: " + message), err


def test_two_configuration_files_are_refused(cwd, capsys):
    (cwd / "one.toml").write_text("")
    (cwd / "two.toml").write_text("")
    code, _, err = run(capsys, "--no-cache", "--config", "one.toml", "--config", "two.toml", "a.py")
    assert code == 2 and err == "ddp-lint: configuration error: --config: more than one configuration file (one.toml, two.toml)\n"


def test_extend_ignore_leaves_rules_out_as_ignore_does_on_the_command_line_and_in_the_file(cwd, capsys):
    assert codes(capsys, "--extend-select", "DDP201", "--extend-ignore", "DDP101", "a.py")[:2] == (1, ["DDP201"])
    assert codes(capsys, "--extend-ignore", "DDP1", "a.py")[:2] == (0, [])
    (cwd / "ddp-lint.toml").write_text('ignore = ["DDP201"]\nextend-ignore = ["DDP101"]\nextend-select = ["DDP201"]\n')
    assert codes(capsys, "a.py")[:2] == (0, [])
    code, _, err = run(capsys, "--no-cache", "--extend-ignore", "DDP9", "a.py")
    assert code == 2 and err.startswith("ddp-lint: error: --extend-ignore: unknown rule selector 'DDP9'")


def test_ignore_noqa_reports_and_fixes_what_noqa_silences(cwd, capsys):
    (cwd / "a.py").write_text(SEED.replace("lr=0.1)", "lr=0.1)  # noqa: DDP101"))
    assert codes(capsys, "a.py")[:2] == (0, [])
    assert codes(capsys, "--ignore-noqa", "a.py")[:2] == (1, ["DDP101"])
    assert run(capsys, "--no-cache", "--fix", "a.py")[0] == 0 and "noqa" in (cwd / "a.py").read_text()
    assert run(capsys, "--no-cache", "--fix", "--ignore-noqa", "a.py")[0] == 0
    assert (cwd / "a.py").read_text().splitlines()[2:] == ["model.cuda()", "opt = torch.optim.SGD(model.parameters(), lr=0.1)  # noqa: DDP101"]
