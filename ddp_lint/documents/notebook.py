"""Jupyter notebooks: lint the code cells as one program, report `cell` and line-in-cell, fix cell sources.

The code cells are joined in order (an optimizer built in cell 3 and a model moved in cell 5 is a
finding), with one boundary statement between cells so that the fixed text can be cut back into
cells. IPython syntax (line and cell magics, `!shell` lines, `obj?` help) becomes a placeholder line of
the same indentation, tagged with the original line's number, so line numbers, parsing and the fix
round trip all survive. `--fix` rewrites only the `source` of code cells, splicing them
into the original JSON text: outputs, metadata and formatting stay byte for byte.
"""
from __future__ import annotations

import copy
import json
import keyword
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .python import InputError, SourceText

# A statement the fixer never moves (it reads no name an optimizer binds) and no cell can contain.
_BOUNDARY = "__ddp_lint_cell__"
_BOUNDARY_LINE = re.compile(rf"^{_BOUNDARY}\((\d+)\)$")
_MAGIC_TAG = "__ddp_lint_magic__"
_PLACEHOLDER = re.compile(rf"{_MAGIC_TAG}\((\d+)[,)]")

# Cell magics whose body is still Python: only their first line is IPython syntax.
_PYTHON_BODY_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_MAGIC_OR_SHELL = re.compile(r"^[ \t]*(?:%|!|\?)")
_ASSIGNED_MAGIC = re.compile(r"^[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*[%!]")
_HELP = re.compile(r"^[ \t]*[\w.\[\]()]+[ \t]*\?{1,2}[ \t]*$")


@dataclass
class _CodeCell:
    position: int  # 1-based among all cells, markdown and raw counted
    index: int  # index in the notebook's `cells` list
    source: str  # as in the notebook
    as_list: bool  # nbformat allows a list of lines or one string
    python: str = ""  # the source with IPython syntax replaced, ending with a newline


@dataclass
class _Program:
    """The joined Python text and what is needed to map it back to cells."""

    text: str
    cells: List[_CodeCell]
    magics: List[str] = field(default_factory=list)  # original lines, by placeholder number


class NotebookDocument:
    """A notebook: its Python code cells joined into one program, mapped back line by line."""

    def __init__(self, path: str, source: SourceText) -> None:
        self.path = path
        self.source = source
        self._document = _load(source.text)
        self._program = _program(self._document)
        self.program: Optional[str] = self._program.text if self._program is not None else None  # None: no Python
        self._map = _cell_map(self.program, self._program) if self._program is not None else []

    def place(self, line: int) -> Tuple[Optional[int], int]:
        """(cell position, line in the cell) for a line of the program; (None, line) on a boundary."""
        if 1 <= line <= len(self._map) and self._map[line - 1][0]:
            return self._map[line - 1]
        return None, line

    def writable(self, line: int) -> bool:
        """Whether text added at the end of a program line lands in a cell: not on a line between
        cells, nor on an IPython line's placeholder (the cell gets its original line back)."""
        if self.place(line)[0] is None or self.program is None:
            return False
        lines = self.program.split("\n")
        return 1 <= line <= len(lines) and _MAGIC_TAG not in lines[line - 1]

    def rebuild(self, program: str) -> str:
        """The notebook's new JSON text for a fixed program: only code-cell sources change, spliced
        into the original text so outputs, metadata and formatting stay byte for byte."""
        assert self._program is not None
        if program == self._program.text:
            return self.source.text
        sources = _split_cells(program, self._program)
        if sources is None:
            raise InputError("the fix could not be mapped back onto the notebook's cells; notebook left unchanged")
        new_text = _splice(self.source.text, self._document, self._program, sources)
        if not _only_sources_changed(self._document, new_text, self._program, sources):
            raise InputError("the fixed notebook did not re-read as the same notebook with new sources; left unchanged")
        return new_text


# ----- reading -------------------------------------------------------------------------------------


def _load(text: str) -> Dict[str, Any]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid notebook JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise InputError("invalid notebook JSON: nested too deeply") from None
    if not isinstance(document, dict):
        raise InputError("invalid notebook JSON: the top level is not an object")
    if "worksheets" in document and "cells" not in document:
        raise InputError("nbformat 3 notebooks are not supported; convert with `jupyter nbconvert --to notebook`")
    cells = document.get("cells")
    if not isinstance(cells, list):
        raise InputError("invalid notebook JSON: no `cells` list")
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise InputError(f"invalid notebook JSON: cell {number} has no `cell_type`")
        if cell["cell_type"] == "code" and not _is_source(cell.get("source", "")):
            raise InputError(f"invalid notebook JSON: cell {number} `source` is not a string or a list of strings")
    return document


def _is_source(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _is_python(document: Dict[str, Any]) -> bool:
    metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    for key in ("language_info", "kernelspec"):
        info = metadata.get(key)
        language = info.get("name" if key == "language_info" else "language") if isinstance(info, dict) else None
        if isinstance(language, str) and language:
            return language.lower() in ("python", "python3", "ipython", "ipython3")
    return True  # no language recorded: assume Python, as Jupyter does


def _program(document: Dict[str, Any]) -> Optional[_Program]:
    if not _is_python(document):
        return None
    cells: List[_CodeCell] = []
    for index, cell in enumerate(document["cells"]):
        if cell["cell_type"] != "code":
            continue
        raw = cell.get("source", "")
        text = raw if isinstance(raw, str) else "".join(raw)
        if _BOUNDARY in text or _MAGIC_TAG in text:
            raise InputError(f"cell {index + 1} contains `{_BOUNDARY}` or `{_MAGIC_TAG}`, which ddp-lint reserves")
        cells.append(_CodeCell(index + 1, index, text, isinstance(raw, list)))
    if not cells:
        return None
    program = _Program("", cells)
    for cell in cells:
        cell.python = _pythonize(cell.source, program.magics)
    parts = []
    for number, cell in enumerate(cells):
        if number:
            parts.append(f"{_BOUNDARY}({cell.position})\n")
        parts.append(cell.python)
    program.text = "".join(parts)
    return program


def _pythonize(source: str, magics: List[str]) -> str:
    """The cell as plain Python, one line for one line; IPython lines become remembered placeholders."""
    lines = _split_lines(source)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"

    def placeholder(line: str, reads: bool = True) -> str:
        magics.append(line)
        return _placeholder(line, len(magics) - 1, reads)

    out = list(lines)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        words = lines[first].lstrip()[2:].split(None, 1)
        if not words or words[0] not in _PYTHON_BODY_CELL_MAGICS:
            # %%bash, %%writefile...: not Python at all, and no Python names in it
            return "".join(placeholder(line, reads=False) for line in lines)
        out[first] = placeholder(lines[first], reads=False)
    scanner = _Scanner()
    for i, line in enumerate(lines):
        if out[i] is not line:
            continue  # already a placeholder
        if scanner.at_statement_start() and (
            _MAGIC_OR_SHELL.match(line) or _ASSIGNED_MAGIC.match(line) or _HELP.match(line)
        ):
            out[i] = placeholder(line)  # not scanned: a quote in a shell line must not open a string
        else:
            scanner.feed(line)
    return "".join(out)


def _placeholder(line: str, number: int, reads: bool) -> str:
    """A Python line standing for an IPython one, tagged with its number so the fix can put it back.

    `%time expr` becomes `expr` (the analysis sees what it does); any other line becomes a call that
    reads the names the line mentions, so the fixer never moves a statement across a magic that uses it.
    """
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    body = line.strip()
    targets = ""
    assigned = _ASSIGNED_MAGIC.match(line)
    if assigned:
        targets, body = body.split("=", 1)
        targets, body = targets.strip() + " = ", body.strip()
    if not targets and body.startswith(("%time ", "%timeit ")):
        code = body.split(None, 1)[1]
        if not code.startswith("-") and _compiles(code):
            return f"{indent}{code}  # {_MAGIC_TAG}({number})\n"
    names: List[str] = []
    if reads:
        if body.startswith("%"):
            body = body.split(None, 1)[1] if len(body.split(None, 1)) > 1 else ""  # the magic's own name is not a read
        words = dict.fromkeys(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", body))
        names = [word for word in words if not keyword.iskeyword(word) and not keyword.issoftkeyword(word)]
    return f"{indent}{targets}{_MAGIC_TAG}({', '.join([str(number), *names])})\n"


def _compiles(code: str) -> bool:
    try:
        compile(code, "<magic>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


class _Scanner:
    """Tells whether the next line begins a statement (not inside brackets, a string or a continuation).

    A light scanner rather than `tokenize`, which stops at the first IPython line; it only has to
    tell `% b)` continuing an expression from a `%magic` line.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.quote: Optional[str] = None  # the open string's delimiter: ', ", ''' or """
        self.continued = False

    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        self.continued = False
        i, n = 0, len(line)
        while i < n:
            char = line[i]
            if self.quote is not None:
                if char == "\\":
                    i += 2
                    continue
                if line.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                    continue
                if len(self.quote) == 1 and char == "\n":
                    self.quote = None  # an unterminated short string ends with its line
                i += 1
                continue
            if char == "#":
                return
            if char in "\"'":
                self.quote = line[i : i + 3] if line.startswith(char * 3, i) else char
                i += len(self.quote)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            elif char == "\\" and line[i + 1 : i + 2] in ("\n", "\r", ""):
                self.continued = True
            i += 1


def _split_lines(text: str) -> List[str]:
    """Lines with their `\\n`; unlike str.splitlines, form feeds and U+2028 stay inside a line."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


# ----- mapping back to cells -------------------------------------------------------------------------


def _cell_map(text: str, program: _Program) -> List[Tuple[int, int]]:
    """(cell position, line in cell) for each line of a joined text; (0, 0) on boundary lines."""
    current, line_in_cell = program.cells[0].position, 0
    mapping = []
    for line in text.split("\n"):
        match = _BOUNDARY_LINE.match(line)
        if match:
            current, line_in_cell = int(match.group(1)), 0
            mapping.append((0, 0))
            continue
        line_in_cell += 1
        mapping.append((current, line_in_cell))
    return mapping


def _split_cells(text: str, program: _Program) -> Optional[Dict[int, str]]:
    """New source per cell position from the fixed joined text, or None if the boundaries did not survive."""
    chunks: List[List[str]] = [[]]
    order = [program.cells[0].position]
    for line in _split_lines(text):
        match = _BOUNDARY_LINE.match(line.rstrip("\n"))
        if match:
            order.append(int(match.group(1)))
            chunks.append([])
        else:
            chunks[-1].append(line)
    if order != [cell.position for cell in program.cells]:
        return None
    used = set()
    sources: Dict[int, str] = {}
    for cell, lines in zip(program.cells, chunks):
        restored = []
        for line in lines:
            match = _PLACEHOLDER.search(line)
            if match:
                number = int(match.group(1))
                if number in used or number >= len(program.magics):
                    return None
                used.add(number)
                original = program.magics[number]
                restored.append(original if original.endswith("\n") else original + "\n")
            else:
                restored.append(line)
        new = "".join(restored)
        if not cell.source.endswith("\n") and new.endswith("\n"):
            new = new[:-1]  # the join added this newline; Jupyter stores the last line without one
        sources[cell.position] = new
    if len(used) != len(program.magics):
        return None  # a placeholder went missing: the fixer touched IPython lines
    return sources


def _splice(text: str, document: Dict[str, Any], program: _Program, sources: Dict[int, str]) -> str:
    """The original JSON text with only the changed `source` values rewritten, in the file's own style."""
    spans = _source_spans(text)
    indent = _indent_of(text)
    ensure_ascii = _prefers_ascii(text)
    edits = []
    for cell in program.cells:
        new = sources[cell.position]
        if new == cell.source:
            continue
        span = spans.get(cell.index)
        if span is None:
            raise InputError(f"cannot locate the source of cell {cell.position} in the notebook text; not fixed")
        start, end = span
        value: Any = _split_lines(new) if cell.as_list else new
        line_start = text.rfind("\n", 0, start) + 1
        base = re.match(r"[ \t]*", text[line_start:start]).group(0)
        rendered = json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)
        if indent is None and not _has_spaced_separators(text):
            rendered = json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":"))
        rendered = rendered.replace("\n", "\n" + base)
        edits.append((start, end, rendered))
    for start, end, rendered in sorted(edits, reverse=True):
        text = text[:start] + rendered + text[end:]
    return text


def _only_sources_changed(document: Dict[str, Any], new_text: str, program: _Program, sources: Dict[int, str]) -> bool:
    """Re-read the spliced text: same notebook, the intended sources, nothing else touched."""
    try:
        fixed = json.loads(new_text)
    except ValueError:
        return False
    expected = copy.deepcopy(document)
    for cell in program.cells:
        if sources[cell.position] != cell.source:
            new = sources[cell.position]
            expected["cells"][cell.index]["source"] = _split_lines(new) if cell.as_list else new
    return fixed == expected


def _source_spans(text: str) -> Dict[int, Tuple[int, int]]:
    """Character span of each cell's `source` value in the JSON text, by the cell's index."""
    decoder = json.JSONDecoder()
    whitespace = re.compile(r"[ \t\n\r]*")

    def skip(i: int) -> int:
        return whitespace.match(text, i).end()

    def object_members(i: int):
        """Yields (key, value start, value end) for the object starting at text[i] == '{'."""
        i = skip(i + 1)
        if text[i] == "}":
            return
        while True:
            key, i = json.decoder.scanstring(text, i + 1)
            i = skip(skip(i) + 1)  # past ':'
            _, end = decoder.raw_decode(text, i)
            yield key, i, end
            i = skip(end)
            if text[i] == "}":
                return
            i = skip(i + 1)  # past ','

    spans: Dict[int, Tuple[int, int]] = {}
    for key, start, _ in object_members(skip(0)):
        if key != "cells":
            continue
        i = skip(start + 1)
        index = 0
        while text[i] != "]":
            _, end = decoder.raw_decode(text, i)
            for member, value_start, value_end in object_members(i):
                if member == "source":
                    spans[index] = (value_start, value_end)
            index += 1
            i = skip(end)
            if text[i] == ",":
                i = skip(i + 1)
    return spans


def _indent_of(text: str) -> Optional[int]:
    match = re.search(r"\n([ ]+)\S", text)
    return len(match.group(1)) if match else None


def _prefers_ascii(text: str) -> bool:
    """True when the file escapes non-ASCII characters (`\\u00e9`) rather than writing them."""
    if any(ord(c) > 127 for c in text):
        return False
    return any(int(code, 16) > 127 for code in re.findall(r"\\u([0-9a-fA-F]{4})", text))


def _has_spaced_separators(text: str) -> bool:
    return re.search(r'"\s*:\s', text) is not None
