"""What users read, pinned: the full text and JSON diagnostics of every fixture (message, summary,
columns, end positions, related locations, fix), as ruff snapshots its diagnostics. A change to any
message, position or fix fails here and shows the difference.

One snapshot per fixture folder under `tests/snapshots/`. After an intended change, rewrite them
and review the diff like code:

    DDP_LINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_snapshots.py

Every folder under `fixtures/` is pinned, none skipped. A snapshot pins TODAY's output, right or
wrong: `fixtures/model/` (and `fixtures/projects/model_*`) hold the causes of misses and false
reports that engine v3 must fix (`# engine-v3: known ...` lines; tests/test_fixtures.py states the
correct findings), so its snapshot shows the false reports and lacks the missed findings. When the
engine gets a case right, this snapshot changes with it: review that diff against the `# expect:` lines.
"""
import json
from pathlib import Path

import pytest

from cli_run import UPDATE_SNAPSHOTS as UPDATE, matches_snapshot, repo_output

REPO = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
FOLDERS = sorted(p.name for p in (REPO / "fixtures").iterdir() if p.is_dir())


_cli = repo_output


@pytest.fixture(scope="module")
def rendered():
    """Both renderings of one run over every fixture folder, cut per folder."""
    text = _cli("--output-format", "full", "--no-show-source", "fixtures")
    data = json.loads(_cli("--output-format", "json", "fixtures"))
    by_folder = {}
    for folder in FOLDERS:
        prefix = f"fixtures/{folder}/"
        lines, keep = [], False
        for line in text.splitlines():
            if not line.startswith("  "):
                keep = line.startswith(prefix)
            if keep:
                lines.append(line)
        findings = [f for f in data["findings"] if f["path"].startswith(prefix)]
        errors = [e for e in data["errors"] if e["path"].startswith(prefix)]
        by_folder[folder] = (
            "# full text output\n" + "\n".join(lines) + "\n\n# JSON findings and errors\n"
            + json.dumps({"findings": findings, "errors": errors}, indent=1, ensure_ascii=False) + "\n"
        )
    return by_folder


def test_every_fixture_folder_has_a_snapshot():
    missing = [f for f in FOLDERS if not (SNAPSHOTS / f"{f}.snap").exists()]
    assert UPDATE or not missing, f"no snapshot for {missing}: run with DDP_LINT_UPDATE_SNAPSHOTS=1"


@pytest.mark.parametrize("folder", FOLDERS)
def test_diagnostics_match_the_snapshot(rendered, folder):
    matches_snapshot(SNAPSHOTS / f"{folder}.snap", rendered[folder], f"diagnostics for fixtures/{folder}")


def test_concise_first_lines_stay_short(rendered):
    """The first line says code, what and where; the explanation is the full format's second line.
    (Before: a median of 346 characters against ruff's 109.)"""
    concise = _cli("--output-format", "concise", "fixtures")
    lines = [line for line in concise.splitlines() if ": DDP" in line]
    assert len(lines) > 150
    without_path = sorted(len(line.split(": ", 1)[1]) for line in lines)
    assert without_path[len(without_path) // 2] <= 90 and without_path[-1] <= 120, without_path[-5:]
