"""The `# noqa: CODE` comments that silence findings: `--add-noqa` writes them, and the editor's
"Disable DDP101 for this line" offers one.

A comment goes where `suppression` reads it (the finding's line, or the first line after it that can
end with a comment), never inside a string: a `# noqa:` already in that line's comment gets the new
codes after its own (other tools' codes are kept, in their order); otherwise `  # noqa: CODES` is
added at the end of the line, after any comment it has. A code a comment already silences is not
added again, so adding twice changes nothing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from .suppression import comment_line, comment_places, listed_codes, noqa_comments, silences

_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
# A code as flake8 and ruff write them; `# noqa: E501 long URL` lists E501 and then words.
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)


@dataclass(frozen=True)
class Insertion:
    """Text to insert into one line: at `column` (0-based, in code points) of the 1-based `line`."""

    line: int
    column: int
    text: str


def insertions(text: str, findings: Iterable[Tuple[int, str]],
               writable: Callable[[int], bool] = lambda line: True) -> List[Insertion]:
    """One insertion per line that needs one, for findings given as (program line, code). A finding
    whose comment line `writable` refuses (a notebook's IPython line) gets none."""
    places = comment_places(text)
    lines = _LINE_BREAK.split(text)[0::2]
    wanted: Dict[int, List[str]] = {}
    for line, code in findings:
        target = comment_line(places.carried, line)
        if 1 <= target <= len(lines) and writable(target):
            wanted.setdefault(target, [])
            if code not in wanted[target]:
                wanted[target].append(code)
    out = []
    for target, codes in sorted(wanted.items()):
        insertion = _insertion(lines[target - 1], target, sorted(codes), places.comments.get(target))
        if insertion is not None:
            out.append(insertion)
    return out


def _insertion(line_text: str, line: int, codes: List[str], comment: Optional[int]) -> Optional[Insertion]:
    matches = list(noqa_comments(line_text))
    missing = [code for code in codes if not any(silences(match, code) for match in matches)]
    if not missing:
        return None
    for match in matches:
        if comment is None or match.start() < comment or not listed_codes(match):
            continue  # in a string, not a comment (a bare noqa comment would have silenced everything)
        end = _end_of_codes(match)
        if end is not None:
            return Insertion(line, end, ", " + ", ".join(missing))
    return Insertion(line, len(line_text.rstrip()), "  # noqa: " + ", ".join(missing))


def _end_of_codes(match: "re.Match[str]") -> Optional[int]:
    """Where the codes a `# noqa:` lists end (before any words after them); None if it lists none."""
    start, codes = match.start("codes"), match.group("codes")
    end = None
    for token in re.finditer(r"[^,\s]+", codes):
        if not _CODE.fullmatch(token.group(0)):
            break
        end = start + token.end()
    return end


def apply(text: str, edits: Iterable[Insertion]) -> str:
    """The text with the insertions made; its line breaks stay as they were."""
    pieces = _LINE_BREAK.split(text)
    for edit in edits:
        at = 2 * (edit.line - 1)
        pieces[at] = pieces[at][: edit.column] + edit.text + pieces[at][edit.column :]
    return "".join(pieces)
