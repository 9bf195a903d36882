"""The in-process command line for tests: exit code, stdout and stderr of one `ddp-lint` call; the
output of a call from the repository's root over its fixtures, and the comparison with its snapshot."""
import difflib
import io
import os
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from ddp_lint.cli import main

REPO = Path(__file__).resolve().parent.parent


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def repo_output(*args: str) -> str:
    """stdout of `ddp-lint --no-cache --isolated --select ALL -j 1 ARGS...` run from the repository's root."""
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        with redirect_stdout(out):
            main(["--no-cache", "--isolated", "--select", "ALL", "-j", "1", *args])
    finally:
        os.chdir(cwd)
    return out.getvalue()


# `DDP_LINT_UPDATE_SNAPSHOTS=1 python -m pytest ...` rewrites the snapshots instead (review the diff).
UPDATE_SNAPSHOTS = os.environ.get("DDP_LINT_UPDATE_SNAPSHOTS") == "1"


def matches_snapshot(path: Path, actual: str, what: str) -> None:
    """Fails with a unified diff when `actual` differs from the snapshot at `path` (or rewrites it)."""
    if UPDATE_SNAPSHOTS:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), str(path), "now"))
        pytest.fail(f"{what} changed (DDP_LINT_UPDATE_SNAPSHOTS=1 rewrites):\n{diff[:6000]}")
