"""`python -m ddp_lint.dev new-rule CODE NAME [--severity S] [--reads KIND,...]`: the developer commands' entry."""
from __future__ import annotations

import argparse
import sys
from typing import List, NoReturn, Optional

from .new_rule import READABLE_KINDS, NewRuleError, add_rule


class _Parser(argparse.ArgumentParser):
    # One line on a usage error, as the checks of new_rule give, not argparse's usage block.
    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: Optional[List[str]] = None) -> int:
    parser = _Parser(prog="python -m ddp_lint.dev", description="Developer commands of ddp-lint.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    new = commands.add_parser(
        "new-rule", help="write a new rule's module, table row, fixture folder, snapshot and README row",
        description="Write a draft rule: its module (docs, VALID/INVALID examples, an accepts() to fill in), "
                    "its row in rules/table.py, fixtures/CODE/ with a case that must not fire, its snapshot "
                    "and its README row. Refuses when any of them exists.",
    )
    new.add_argument("code", help="DDPnnn: the hundreds digit is the severity (0 error, 1 warning, 2 info)")
    new.add_argument("name", help="kebab-case, e.g. optimizer-before-compile")
    new.add_argument("--severity", choices=("error", "warning", "info"),
                     help="must agree with the code's hundreds digit (the default)")
    new.add_argument("--reads", default="move", help=f"comma-separated placement kinds the rule fires on "
                                                     f"(default move): {', '.join(READABLE_KINDS)}")
    args = parser.parse_args(argv)
    try:
        written = add_rule(args.code, args.name, args.severity, [k.strip() for k in args.reads.split(",") if k.strip()])
    except NewRuleError as exc:
        print(f"python -m ddp_lint.dev new-rule: error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    print(f"next: write accepts() and the docs in {written[0]}, add cases beside {written[2]}, then delete its `draft` line;")
    # the formats' snapshots count every fixture file, so a new one changes them (and nothing else should)
    print("then DDP_LINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_snapshots.py tests/test_formats_for_other_tools.py "
          "and review the diff")
    return 0


if __name__ == "__main__":
    sys.exit(main())
