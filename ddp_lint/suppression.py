"""`# noqa` and `# noqa: DDP101` on a finding's first line, as flake8 and ruff read them.

Applied by the pipeline (checking and `--fix` alike); the flake8 plugin leaves it to flake8, which
also honours `--disable-noqa`."""
from __future__ import annotations

import re
from typing import List, Optional, Sequence, TypeVar

_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z][A-Z0-9]*(?:[,\s]+[A-Z][A-Z0-9]*)*))?", re.IGNORECASE)

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
T = TypeVar("T")


def unsuppressed(findings: Sequence[T], text: str) -> List[T]:
    """The findings (anything with `line` and `code`, in program lines) no `# noqa` comment silences."""
    if "noqa" not in text.lower():
        return list(findings)
    lines = _LINE_BREAK.split(text)  # the parser's lines: a form feed or U+2028 does not end one
    return [f for f in findings if not suppressed(lines, f.line, f.code)]  # type: ignore[attr-defined]


def noqa_comment(line: str) -> Optional["re.Match[str]"]:
    """The `# noqa` comment on one line, if any; its `codes` group holds the codes it lists (None: all)."""
    return _NOQA.search(line)


def suppressed(lines: List[str], line: int, code: str) -> bool:
    if not 1 <= line <= len(lines):
        return False
    match = noqa_comment(lines[line - 1])
    if match is None:
        return False
    codes = match.group("codes")
    if not codes:
        return True
    return any(code.startswith(c.upper()) for c in re.split(r"[,\s]+", codes) if c)
