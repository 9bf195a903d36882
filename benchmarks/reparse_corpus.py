#!/usr/bin/env python
"""`parsing.Reparser` against whole parses on real code: the same tree, code and positions, and what it costs.

    python benchmarks/reparse_corpus.py [FOLDER ...]     # default: the ecosystem downloads
                                                         # (benchmarks/_work/ecosystem/src)
    python benchmarks/reparse_corpus.py --every 10       # every 10th file (~6 min instead of ~60)

Not a test (the corpus is downloaded, not in the repository). For every `.py` file that LibCST
parses: one Reparser parses the file, then an edited version (a line added in the middle top-level
function, as typing would), then the file again; each result is compared with a whole parse of the
same text (trees `deep_equals`, code, and the position of every node). Prints how many files were
compared, how many went through chunks and how many fell back to a whole parse, any difference
(a difference exits 1), and the time of the whole parse against the Reparser's warm parse of the edit.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from ddp_lint.analysis.positions import Positions  # noqa: E402
from ddp_lint.documents.python import InputError  # noqa: E402
from ddp_lint.parsing import ChunkPositions, Reparser, parse  # noqa: E402


def _same(reparser: Reparser, text: str) -> str:
    """'' when the Reparser's result equals the whole parse, else what differs."""
    module, positions = reparser.parse(text)
    whole = parse(text)
    if module.code != whole.code:
        return "code"
    if not module.deep_equals(whole):
        return "tree"
    expected = Positions(whole)
    pending = [(module, whole)]
    while pending:
        mine, theirs = pending.pop()
        if positions[mine] != expected[theirs]:
            return f"position of {type(mine).__name__} at {expected[theirs].start.line}"
        pending.extend(zip(mine.children, theirs.children))
    return ""


def _edited(text: str) -> str:
    """A line added at the top of the body of the middle top-level `def`, or a comment at the end."""
    lines = text.splitlines(keepends=True)
    defs = [i for i, line in enumerate(lines) if line.startswith("def ") and line.rstrip().endswith(":")]
    if not defs:
        return text + "\n# edited\n"
    at = defs[len(defs) // 2] + 1
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())] if at < len(lines) else "    "
    return "".join(lines[:at] + [f"{indent or '    '}edited = 1\n"] + lines[at:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, default=[HERE / "_work" / "ecosystem" / "src"])
    parser.add_argument("--every", type=int, default=1, metavar="N", help="only every N-th file (sorted by path)")
    args = parser.parse_args()
    files = sorted(p for folder in args.folders for p in folder.rglob("*.py") if p.is_file())[::max(args.every, 1)]
    compared = chunked = skipped = 0
    problems: List[str] = []
    whole_time = warm_time = 0.0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
            parse(text)
        except (InputError, UnicodeDecodeError, ValueError, RecursionError):
            skipped += 1
            continue
        reparser = Reparser()
        try:
            for version in (text, _edited(text), text):
                difference = _same(reparser, version)
                if difference:
                    problems.append(f"{path}: {difference}")
                    break
            else:
                compared += 1
                chunked += isinstance(reparser.parse(text)[1], ChunkPositions)
        except InputError:  # the edit broke the file (a def with a one-line body): not the subject
            skipped += 1
            continue
        edited = _edited(text)
        start = time.perf_counter()
        Positions(parse(edited))
        middle = time.perf_counter()
        reparser.parse(edited)
        whole_time += middle - start
        warm_time += time.perf_counter() - middle
    print(f"files: {len(files)}; compared: {compared} (through chunks: {chunked}, whole parse: {compared - chunked}); "
          f"not parsed by LibCST or edit invalid: {skipped}; differences: {len(problems)}")
    print(f"edited version: whole parse + positions {whole_time:.1f} s, Reparser (warm) {warm_time:.1f} s")
    for problem in problems[:50]:
        print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
