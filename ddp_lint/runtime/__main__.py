"""`python -m ddp_lint.runtime run|verify ...`: the runtime commands without the main CLI's wiring."""
from __future__ import annotations

import sys
from typing import List, Optional

from .cli import run_main, verify_main

_USAGE = "usage: python -m ddp_lint.runtime {run,verify} [options] SCRIPT [ARGS...]"


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("run", "verify"):
        if argv and argv[0] in ("-h", "--help"):
            print(_USAGE)
            return 0
        print(_USAGE, file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    return run_main(rest) if command == "run" else verify_main(rest)


if __name__ == "__main__":
    sys.exit(main())
