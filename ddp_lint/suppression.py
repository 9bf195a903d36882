"""`# noqa` and `# noqa: DDP101` on a finding's first line, as flake8 and ruff read them.

Where that line cannot end with a comment (it ends inside a multi-line string, or a backslash carries
it on), the comment is read where ruff reads it: at the end of the first line after it that can hold
one (the string's last line, the continuation's last line). `comment_line` says which line that is;
`--add-noqa` writes there. Applied by the pipeline (checking and `--fix` alike, unless
`--ignore-noqa`); the flake8 plugin leaves it to flake8, which also honours `--disable-noqa`."""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Sequence, Set, TypeVar

_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z][A-Z0-9]*(?:[,\s]+[A-Z][A-Z0-9]*)*))?", re.IGNORECASE)

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
T = TypeVar("T")


def unsuppressed(findings: Sequence[T], text: str) -> List[T]:
    """The findings (anything with `line` and `code`, in program lines) no `# noqa` comment silences."""
    if not findings or "noqa" not in text.lower():
        return list(findings)
    lines = _LINE_BREAK.split(text)  # the parser's lines: a form feed or U+2028 does not end one
    last_noqa = max(i for i, line in enumerate(lines, start=1) if "noqa" in line.lower())
    carried: List[Set[int]] = []  # tokenized once, and only for a finding its own line does not silence

    def silenced(line: int, code: str) -> bool:
        if suppressed(lines, line, code):
            return True
        if line >= last_noqa:
            return False  # no comment further down could be this finding's
        if not carried:
            carried.append(comment_places(text).carried)
        target = comment_line(carried[0], line)
        return target != line and suppressed(lines, target, code)

    return [f for f in findings if not silenced(f.line, f.code)]  # type: ignore[attr-defined]


def noqa_comments(line: str) -> Iterator["re.Match[str]"]:
    """Every `# noqa` on one line (its `codes` group holds the codes it lists; None: all): a line may
    have `# noqa: E501` in a string and ours in its comment."""
    return _NOQA.finditer(line)


def listed_codes(match: "re.Match[str]") -> List[str]:
    """The codes a `# noqa:` lists, upper case ([] for a bare `# noqa`, which silences every code)."""
    codes = match.group("codes")
    return [c.upper() for c in re.split(r"[,\s]+", codes) if c] if codes else []


def silences(match: "re.Match[str]", code: str) -> bool:
    codes = listed_codes(match)
    return not codes or any(code.startswith(c) for c in codes)


def suppressed(lines: List[str], line: int, code: str) -> bool:
    if not 1 <= line <= len(lines):
        return False
    return any(silences(match, code) for match in noqa_comments(lines[line - 1]))


@dataclass
class CommentPlaces:
    """What the tokenizer says about a text's line ends: the lines whose end cannot hold a comment
    (inside a string that goes on to the next line, or continued by a backslash), and the column
    where each line's comment starts (so a `# noqa` in a string is told from one in a comment)."""

    carried: Set[int] = field(default_factory=set)
    comments: Dict[int, int] = field(default_factory=dict)  # line -> 0-based column of its `#`


def comment_places(text: str) -> CommentPlaces:
    """Tokenized with Python's tokenizer; a text it rejects has no carried lines and no comments."""
    normalized = _LINE_BREAK.sub("\n", text)  # one `\n` per break: the tokenizer's lines are the parser's
    carried: Set[int] = set()
    commented: Dict[int, int] = {}
    opened: List[int] = []  # f-strings (3.12+ tokenizes them in parts): the lines they start on
    fstring_start = getattr(tokenize, "FSTRING_START", None)
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    try:
        for token in tokenize.generate_tokens(io.StringIO(normalized).readline):
            if token.type == tokenize.COMMENT:
                commented[token.start[0]] = token.start[1]
            elif token.type == tokenize.STRING and token.end[0] > token.start[0]:
                carried.update(range(token.start[0], token.end[0]))
            elif fstring_start is not None and token.type == fstring_start:
                opened.append(token.start[0])
            elif fstring_end is not None and token.type == fstring_end and opened:
                carried.update(range(opened.pop(), token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return CommentPlaces()
    for number, line in enumerate(normalized.split("\n"), start=1):
        if line.endswith("\\") and number not in carried and number not in commented:
            carried.add(number)
    return CommentPlaces(carried, commented)


def comment_line(carried: Set[int], line: int) -> int:
    """The line whose end holds (and is read for) the `# noqa` of a finding on `line`."""
    while line in carried:
        line += 1
    return line

