"""The flake8 plugin, run through the real flake8: the CLI's findings and positions, flake8's selection and noqa."""
import re

import pytest

from ddp_lint.frontends.flake8_plugin import Plugin

from .conftest import CLEAN, SEED

# every test starts a real flake8 process
pytestmark = pytest.mark.slow

FORMAT = "%(path)s|%(row)d|%(col)d|%(code)s|%(text)s"


def flake8_findings(done):
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    found = set()
    for line in done.stdout.splitlines():
        path, row, col, code, text = line.split("|", 4)
        found.add((path, int(row), int(col), code, text))
    return found


def test_plugin_is_registered_under_the_ddp_entry_point(flake8):
    done = flake8("--version")
    assert "ddp-lint: 0." in done.stdout


def test_flake8_reports_what_the_cli_reports_on_every_fixture(flake8, ddp_lint_json):
    """Same findings, codes, line:column and concise message (the summary) as `ddp-lint check`, over all `fixtures/**/*.py`."""
    flake8_side = flake8_findings(flake8("--select", "DDP", "--format", FORMAT, "fixtures"))
    code, document = ddp_lint_json("fixtures")
    cli_side = {
        (f["path"], f["line"], f["column"], f["code"], f["summary"])
        for f in document["findings"]
        if f["path"].endswith(".py")
    }
    assert len(cli_side) > 50  # the comparison covers the corpus, not a handful of files
    assert flake8_side == cli_side


def test_default_flake8_run_includes_ddp_but_not_the_info_rule(tmp_path, flake8):
    (tmp_path / "wrap.py").write_text(
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel = DDP(model)\n"
    )
    (tmp_path / "seed.py").write_text(SEED)
    codes = {c for _, _, _, c, _ in flake8_findings(flake8("--format", FORMAT, ".", cwd=tmp_path))}
    assert "DDP101" in codes and "DDP201" not in codes
    assert "F821" in codes  # a default run: flake8's own checks and ours side by side
    for selector in ("DDP201", "DDP2"):
        done = flake8("--extend-select", selector, "--format", FORMAT, ".", cwd=tmp_path)
        assert ("./wrap.py", 3, 1, "DDP201") in {f[:4] for f in flake8_findings(done)}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "a.py").write_text(SEED)
    (tmp_path / "b.py").write_text(SEED)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def positions(done):
    """(path, line, code) of the DDP findings; pyflakes' F821 on the undefined `Net` is not ours."""
    return sorted((path, row, code) for path, row, _, code, _ in flake8_findings(done) if code.startswith("DDP"))


def test_select_and_extend_ignore(project, flake8):
    assert positions(flake8("--select", "DDP1", "--format", FORMAT, ".", cwd=project)) == [
        ("./a.py", 4, "DDP101"), ("./b.py", 4, "DDP101"),
    ]
    assert positions(flake8("--select", "DDP0", "--format", FORMAT, ".", cwd=project)) == []
    assert positions(flake8("--extend-ignore", "DDP101", "--format", FORMAT, ".", cwd=project)) == []
    assert positions(flake8("--select", "E9,F63", "--format", FORMAT, ".", cwd=project)) == []


def test_per_file_ignores(project, flake8):
    done = flake8("--per-file-ignores", "a.py:DDP101", "--format", FORMAT, ".", cwd=project)
    assert positions(done) == [("./b.py", 4, "DDP101")]


@pytest.mark.parametrize(
    "comment, suppressed",
    [("  # noqa", True), ("  # noqa: DDP101", True), ("  # noqa:DDP1", True), ("  # noqa: E501", False)],
)
def test_noqa_comments(project, flake8, comment, suppressed):
    lines = SEED.splitlines()
    lines[3] += comment
    (project / "a.py").write_text("\n".join(lines) + "\n")
    found = positions(flake8("--format", FORMAT, "a.py", cwd=project))
    assert found == ([] if suppressed else [("a.py", 4, "DDP101")])
    # --disable-noqa: flake8 users expect every finding back, including the engine's own noqa handling
    assert positions(flake8("--disable-noqa", "--select", "DDP", "--format", FORMAT, "a.py", cwd=project)) == [
        ("a.py", 4, "DDP101")
    ]


def test_syntax_error_is_flake8s_e999_not_a_crash(tmp_path, flake8):
    (tmp_path / "broken.py").write_text("import torch\noptimizer = torch.optim.SGD(\nmodel.cuda()\n")
    done = flake8("--format", FORMAT, "broken.py", cwd=tmp_path)
    assert {code for _, _, _, code, _ in flake8_findings(done)} == {"E999"}


def test_parallel_run_matches_serial_run(project, flake8):
    serial = flake8_findings(flake8("--select", "DDP", "--format", FORMAT, ".", cwd=project))
    parallel = flake8_findings(flake8("-j", "2", "--select", "DDP", "--format", FORMAT, ".", cwd=project))
    assert serial == parallel and len(serial) == 2


CONFIG = """[tool.ddp-lint]
extra-optimizer-factories = ["mylib.build_solver"]
extra-placements = { "mylib.to_device" = "move" }
"""
FACTORY = "from mylib import build_solver\n\nsolver = build_solver(model)\nmodel.cuda()\n"
PLACEMENT = "import torch\nfrom mylib import to_device\n\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nto_device(model)\n"


def test_extras_from_pyproject_reach_prefilter_and_analysis(tmp_path, flake8):
    """Neither file has a default holder or placement token: only the configured names can make them match."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "factory.py").write_text(FACTORY)
    (tmp_path / "pkg" / "placement.py").write_text(PLACEMENT)
    assert positions(flake8("--select", "DDP", "--format", FORMAT, "pkg", cwd=tmp_path)) == []
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    assert positions(flake8("--select", "DDP", "--format", FORMAT, "pkg", cwd=tmp_path)) == [
        ("pkg/factory.py", 3, "DDP101"), ("pkg/placement.py", 4, "DDP101"),
    ]


def test_config_selection_and_per_file_ignores_apply_as_in_the_cli(project, flake8):
    (project / "pyproject.toml").write_text('[tool.ddp-lint]\nper-file-ignores = { "b.py" = ["DDP101"] }\n')
    assert positions(flake8("--format", FORMAT, ".", cwd=project)) == [("./a.py", 4, "DDP101")]
    (project / "pyproject.toml").write_text('[tool.ddp-lint]\nignore = ["DDP1"]\n')
    assert positions(flake8("--format", FORMAT, ".", cwd=project)) == []


def test_broken_config_stops_flake8_with_one_message(project, flake8):
    (project / "pyproject.toml").write_text("[tool.ddp-lint]\nbogus = 1\n")
    for extra in ((), ("-j", "2")):
        done = flake8(*extra, "--format", FORMAT, ".", cwd=project)
        assert done.returncode == 1
        assert "Traceback" not in done.stdout + done.stderr
        assert "ddp-lint: configuration error:" in done.stdout and "'bogus'" in done.stdout


def test_file_that_cannot_match_is_never_parsed(monkeypatch):
    import libcst

    def boom(*args, **kwargs):
        raise AssertionError("LibCST was asked to parse a file the prefilter should have rejected")

    monkeypatch.setattr(libcst, "parse_module", boom)
    monkeypatch.setattr(Plugin, "_flake8_codes", None)
    lines = ["import torch\n", "x = torch.zeros(3)\n", "print(x.sum())\n"] * 200
    assert list(Plugin(None, "plain.py", lines).run()) == []


@pytest.mark.parametrize("source, parser_loaded", [("import torch\nx = torch.zeros(3).to('cuda')\n", False), (SEED, True)])
def test_parser_is_imported_only_for_a_file_that_can_match(source, parser_loaded):
    # LibCST in a flake8 worker's heap slows every later garbage collection of the run
    import subprocess
    import sys

    program = (
        "import ast, sys\n"
        "from ddp_lint.frontends.flake8_plugin import Plugin\n"
        "source = sys.stdin.read()\n"
        "list(Plugin(ast.parse(source), 'f.py', source.splitlines(keepends=True)).run())\n"
        "print('libcst' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], input=source, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(parser_loaded)


def test_deselected_plugin_does_no_work(monkeypatch):
    from flake8.options.parse_args import parse_args

    monkeypatch.setattr(Plugin, "_flake8_codes", None)
    monkeypatch.setattr(Plugin, "_explicit", ())
    parse_args(["--isolated", "--select", "E9,F63,F7,F82", "x.py"])
    assert Plugin._flake8_codes == ()
    assert list(Plugin(None, "seed.py", SEED.splitlines(keepends=True)).run()) == []
    parse_args(["--isolated", "--extend-select", "DDP201", "x.py"])
    assert "DDP201" in Plugin._flake8_codes and Plugin._explicit == ("DDP201",)


def test_columns_are_flake8_offsets(monkeypatch):
    monkeypatch.setattr(Plugin, "_flake8_codes", None)
    source = "import torch\n\ndef main(model):\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    model.cuda()\n"
    ((line, offset, text, kind),) = Plugin(None, "nested.py", source.splitlines(keepends=True)).run()
    assert (line, offset, kind) == (4, 4, Plugin)  # printed by flake8 as column 5, the CLI's column
    assert re.match(r"DDP101 optimizer `opt`", text)
