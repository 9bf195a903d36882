"""`--output-format sarif` read back by sarif-tools (a SARIF library from PyPI), and `--output-format github`."""
import json
import re
import shutil
import sys

import pytest
from sarif import loader

from .conftest import FIXTURES, NOTEBOOKS, SEED, run_command

SARIF_INPUTS = ["fixtures/DDP001", "fixtures/DDP002", "fixtures/DDP101", "fixtures/DDP201", "fixtures/refusals"]


@pytest.fixture(scope="module")
def sarif_run(tmp_path_factory):
    """One CLI run in each format over the same fixtures: the SARIF file loaded by sarif-tools, and the JSON."""
    from .conftest import REPO

    out = tmp_path_factory.mktemp("sarif") / "ddp-lint.sarif"
    base = [sys.executable, "-m", "ddp_lint", "check", "--no-cache", "--extend-select", "DDP201"]
    done = run_command(base + ["--output-format", "sarif"] + SARIF_INPUTS, REPO)
    assert done.returncode == 1, done.stderr
    out.write_text(done.stdout, encoding="utf-8")
    as_json = json.loads(run_command(base + ["--output-format", "json"] + SARIF_INPUTS, REPO).stdout)
    return loader.load_sarif_file(str(out)), as_json, out


def test_sarif_tools_reads_every_result_with_rule_location_and_level(sarif_run):
    sarif, as_json, _ = sarif_run
    assert sarif.get_distinct_tool_names() == ["ddp-lint"]
    assert sarif.get_result_count() == len(as_json["findings"]) > 10
    levels = {"error": "error", "warning": "warning", "info": "note"}
    records = {(r["Location"], int(r["Line"]), r["Code"], r["Severity"]) for r in sarif.get_records()}
    expected = {(f["path"], f["line"], f["code"], levels[f["severity"]]) for f in as_json["findings"]}
    assert records == expected


def test_sarif_rules_carry_their_documentation(sarif_run):
    sarif, _, _ = sarif_run
    (run,) = sarif.runs
    for result in run.get_results():
        (rule,) = run.get_rules_by_id(result["ruleId"])
        assert rule["name"] and rule["shortDescription"]["text"]
        assert "## What it does" in rule["help"]["markdown"] and "## Fix safety" in rule["help"]["text"]
        assert run.run_data["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_sarif_related_locations_match_the_cli(sarif_run):
    sarif, as_json, _ = sarif_run
    (run,) = sarif.runs
    by_key = {(f["path"], f["line"], f["code"]): f for f in as_json["findings"]}
    with_related = 0
    for result in run.get_results():
        location = result["locations"][0]["physicalLocation"]
        finding = by_key[(location["artifactLocation"]["uri"], location["region"]["startLine"], result["ruleId"])]
        related = [
            (r["physicalLocation"]["region"]["startLine"], r["physicalLocation"]["region"]["startColumn"])
            for r in result.get("relatedLocations", [])
        ]
        assert related == [(r["line"], r["column"]) for r in finding["related"]]
        with_related += bool(related)
    assert with_related >= 5


def test_sarif_fix_applied_by_hand_gives_the_fixed_file(sarif_run):
    """The SARIF replacement, applied to the file as a consumer would, is the fixer's output."""
    sarif, _, _ = sarif_run
    (run,) = sarif.runs
    path = "fixtures/DDP101/script_with_scheduler.py"
    (result,) = [r for r in run.get_results() if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == path]
    (fix,) = result["fixes"]
    assert fix["description"]["text"].startswith("move the optimizer")
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == path
    (replacement,) = change["replacements"]
    region, inserted = replacement["deletedRegion"], replacement["insertedContent"]["text"]
    lines = (FIXTURES / "DDP101" / "script_with_scheduler.py").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[region["startLine"] - 1 : region["endLine"]] = [inserted + "\n"]
    assert "".join(lines) == (FIXTURES / "DDP101" / "script_with_scheduler.fixed.py").read_text(encoding="utf-8")
    refused = [r for r in run.get_results() if "no automatic fix" in r["message"]["text"]]
    assert refused and all("fixes" not in r for r in refused)


def test_sarif_tools_command_line_summarises_the_file(sarif_run, tmp_path):
    sarif, as_json, path = sarif_run
    done = run_command([sys.executable, "-m", "sarif", "summary", str(path)], tmp_path)
    assert done.returncode == 0, done.stderr
    counts = {level: sum(1 for f in as_json["findings"] if f["severity"] == severity)
              for level, severity in (("error", "error"), ("warning", "warning"), ("note", "info"))}
    for level, count in counts.items():
        assert re.search(rf"{level}: {count}\b", done.stdout), done.stdout
    csv = tmp_path / "out.csv"
    assert run_command([sys.executable, "-m", "sarif", "csv", "--output", str(csv), str(path)], tmp_path).returncode == 0
    assert len(csv.read_text().splitlines()) == len(as_json["findings"]) + 1


def test_sarif_reports_unreadable_input_as_a_failed_invocation(tmp_path, ddp_lint):
    shutil.copy(NOTEBOOKS / "broken.ipynb", tmp_path / "broken.ipynb")
    (tmp_path / "seed.py").write_text(SEED)
    done = ddp_lint("check", "--no-cache", "--output-format", "sarif", ".", cwd=tmp_path)
    assert done.returncode == 2
    out = tmp_path / "out.sarif"
    out.write_text(done.stdout)
    (run,) = loader.load_sarif_file(str(out)).runs
    assert run.get_result_count() == 1
    (invocation,) = run.run_data["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["message"]["text"].startswith("invalid notebook JSON")


ANNOTATION = re.compile(
    r"^::(?P<level>error|warning|notice) title=(?P<title>[^,]+),file=(?P<file>[^,]+),line=(?P<line>\d+),"
    r"col=(?P<col>\d+),endLine=(?P<end_line>\d+),endColumn=(?P<end_col>\d+)::(?P<message>.+)$"
)


def test_github_format_prints_one_workflow_annotation_per_finding(tmp_path, ddp_lint):
    (tmp_path / "a,b.py").write_text(SEED)  # a comma must be escaped inside a property
    (tmp_path / "wrap.py").write_text(
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel = DDP(model)\n"
    )
    shutil.copy(NOTEBOOKS / "broken.ipynb", tmp_path / "broken.ipynb")
    done = ddp_lint("check", "--no-cache", "--output-format", "github", "--extend-select", "DDP201", ".", cwd=tmp_path)
    assert done.returncode == 2  # the broken notebook; the findings are still all reported
    lines = done.stdout.splitlines()
    annotations = [ANNOTATION.match(line) for line in lines if not line.startswith("::error file=")]
    assert all(annotations), lines
    got = {(m["level"], m["title"], m["file"], m["line"], m["col"]) for m in annotations}
    assert got == {
        ("warning", "DDP101 optimizer-before-move", "./a%2Cb.py", "4", "1"),
        ("notice", "DDP201 optimizer-before-wrap", "./wrap.py", "3", "1"),
    }
    assert all(m["message"].startswith(m["title"].split()[0] + " ") for m in annotations)
    errors = [line for line in lines if line.startswith("::error file=")]
    assert len(errors) == 1 and errors[0].startswith("::error file=./broken.ipynb::invalid notebook JSON: Expecting value")


def test_github_format_is_silent_on_a_clean_tree(tmp_path, ddp_lint):
    (tmp_path / "ok.py").write_text("import torch\n")
    done = ddp_lint("check", "--no-cache", "--output-format", "github", ".", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == ""
