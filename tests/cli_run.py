"""The in-process command line for tests: exit code, stdout and stderr of one `ddp-lint` call."""
from ddp_lint.cli import main


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err
