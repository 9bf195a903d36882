"""How many files reach the engine only through the project stage of the prefilter, per tree: those the
plain stages reject and whose project calls supply the half they lack. Each such file is a full analysis
that `--no-project` does not make, so this count is where project analysis spends beyond it.

    python benchmarks/project_stage.py                         # every ecosystem download (benchmarks/_work)
    python benchmarks/project_stage.py TREE [TREE ...]         # chosen trees
    python benchmarks/project_stage.py --list TREE             # and the files, one per line

The same index serves the whole tree, in the CLI's order (sorted paths), as one run would.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from ddp_lint import pipeline  # noqa: E402
from ddp_lint.documents.python import InputError, read_source  # noqa: E402
from ddp_lint.prefilter import project_could_match, settings_could_match  # noqa: E402
from ddp_lint.settings import Settings  # noqa: E402

ECOSYSTEM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_work", "ecosystem", "src")


def passed_by_the_project_stage(tree: str):
    """(the files of `tree` the project stage alone passes, the CPU seconds that stage took)."""
    settings = Settings()
    index = pipeline.project_index(settings, tree)
    files = sorted(os.path.join(d, f) for d, _, names in os.walk(tree) for f in names if f.endswith(".py"))
    passed, spent = [], 0.0
    for path in files:
        try:
            text = read_source(path).text
        except InputError:
            continue
        if settings_could_match(text, settings, None):
            continue  # the plain stages pass it: `--no-project` analyses it too
        started = time.process_time()
        index.begin()
        if project_could_match(text, path, settings, index):
            passed.append(path)
        spent += time.process_time() - started
    return passed, spent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", help="folders to count (default: every ecosystem download)")
    parser.add_argument("--list", action="store_true", help="print the files passed, too")
    args = parser.parse_args(argv)
    trees = args.trees or (sorted(os.path.join(ECOSYSTEM, name) for name in os.listdir(ECOSYSTEM))
                           if os.path.isdir(ECOSYSTEM) else [])
    if not trees:
        print("no trees: run benchmarks/ecosystem.py first, or name folders", file=sys.stderr)
        return 2
    total = 0
    for tree in trees:
        passed, spent = passed_by_the_project_stage(tree)
        total += len(passed)
        print(f"{os.path.basename(os.path.normpath(tree)):40} {len(passed):5}  {spent:6.2f} s")
        for path in passed if args.list else ():
            print("    " + os.path.relpath(path, tree))
    print(f"{'total':40} {total:5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
