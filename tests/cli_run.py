"""The in-process command line for tests: exit code, stdout and stderr of one `ddp-lint` call; and the
output of a call from the repository's root over its fixtures, as the snapshot tests pin it."""
import io
import os
from contextlib import redirect_stdout
from pathlib import Path

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
