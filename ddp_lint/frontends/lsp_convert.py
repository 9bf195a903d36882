"""Findings as Language Server Protocol data: a diagnostic (severity, code, the rule's documentation,
the related locations), a fix's line edit and a `# noqa` comment as text edits.

Positions: a finding counts 1-based lines and code points; LSP counts 0-based lines and the units the
client negotiated (UTF-16 unless it asked for another), so every column is converted against the
text of its line. A location in a file the editor does not hold keeps its code-point column.
"""
from __future__ import annotations

import inspect
from functools import lru_cache
from typing import Dict, Iterable, List, Optional, Tuple

from lsprotocol import types

from ..findings import Finding
from .. import noqa_edits
from .lsp_documents import Snapshot, file_uri, split_lines

SOURCE = "ddp-lint"

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


def position(line_text: Optional[str], line: int, column: int, codec) -> types.Position:
    """The client position of a 0-based `line` and 1-based code-point `column`."""
    character = max(column - 1, 0)
    if line_text is not None:
        character = codec.client_num_units(line_text[:character])
    return types.Position(line=max(line, 0), character=character)


def position_at(text: str, offset: int, codec) -> types.Position:
    """The client position of a character offset into `text`."""
    lines = split_lines(text[:offset])
    return types.Position(line=len(lines) - 1, character=codec.client_num_units(lines[-1]))


@lru_cache(maxsize=None)
def docs_uri(code: str) -> Optional[str]:
    """The rule's documentation: its module, whose docstring is what `ddp-lint rule CODE` prints."""
    from ..rules import RULES

    if code not in RULES:
        return None
    return file_uri(inspect.getfile(type(RULES[code])))


def diagnostic(finding: Finding, snapshot: Snapshot, codec) -> Optional[Tuple[str, types.Diagnostic]]:
    """The finding as a diagnostic, with the URI of the editor document it is on (a notebook's cell);
    None when it is on no line the editor shows."""
    place = snapshot.place(finding.path, finding.cell, finding.line)
    if place is None:
        return None
    end = snapshot.place(finding.path, finding.cell, finding.end_line) or place
    start = position(place.text, place.line, finding.column, codec)
    stop = position(end.text, end.line, finding.end_column, codec)
    if (stop.line, stop.character) < (start.line, start.character):
        stop = start
    related = []
    for r in finding.related:
        at = snapshot.place(r.path, r.cell, r.line)
        if at is None:
            continue
        begin = position(at.text, at.line, r.column, codec)
        # the rest of the line: the statement that moves, casts or wraps the model
        finish = position(at.text, at.line, len(at.text.rstrip()) + 1, codec) if at.text is not None else begin
        if finish.character < begin.character:
            finish = begin
        related.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=at.uri, range=types.Range(start=begin, end=finish)),
            message=f"{r.role}: {r.message}",
        ))
    docs = docs_uri(finding.code)
    return place.uri, types.Diagnostic(
        range=types.Range(start=start, end=stop),
        # the concise line first (what an editor shows inline), then the explanation, which ends with
        # why a fix is unsafe or refused
        message=f"{finding.summary}\n{finding.message}" if finding.summary else finding.message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=docs) if docs else None,
        source=SOURCE,
        related_information=related or None,
    )


def unparsable_diagnostic(message: str, cell: Optional[int], line: int, column: int, snapshot: Snapshot,
                          codec) -> Optional[Tuple[str, types.Diagnostic]]:
    """A text that does not parse, marked at the parser's line and column, with no code (as ruff
    shows a syntax error); None where the editor shows no such line."""
    place = snapshot.place(snapshot.path, cell, line)
    if place is None:
        return None
    start = position(place.text, place.line, column, codec)
    stop = position(place.text, place.line, len(place.text.rstrip()) + 1, codec) if place.text is not None else start
    if (stop.line, stop.character) <= (start.line, start.character):
        stop = types.Position(line=start.line, character=start.character + 1)
    return place.uri, types.Diagnostic(range=types.Range(start=start, end=stop), message=message,
                                       severity=types.DiagnosticSeverity.Error, source=SOURCE)


def diagnostics_by_uri(findings: Iterable[Finding], snapshot: Snapshot, codec) -> Dict[str, List[types.Diagnostic]]:
    """Every editor document of the buffer (each notebook cell) with its diagnostics, empty ones included."""
    found: Dict[str, List[types.Diagnostic]] = {uri: [] for uri in snapshot.texts()}
    for finding in findings:
        converted = diagnostic(finding, snapshot, codec)
        if converted is not None and converted[0] in found:
            found[converted[0]].append(converted[1])
    return found


def replacement(old: str, new: str, codec) -> types.TextEdit:
    """The one edit that turns `old` into `new`: the lines between their common first and last lines
    (a fix moves a few statements; replacing the whole text would lose the editor's cursor and undo
    steps). Lines are compared as str.splitlines cuts them and the range is built from character
    offsets, so it is exact whatever the line ends."""
    from ..fixer.apply import changed_span

    before, after = old.splitlines(keepends=True), new.splitlines(keepends=True)
    start, end_before, end_after = changed_span(before, after)
    begin = sum(len(line) for line in before[:start])
    finish = begin + sum(len(line) for line in before[start:end_before])
    return types.TextEdit(
        range=types.Range(start=position_at(old, begin, codec), end=position_at(old, finish, codec)),
        new_text="".join(after[start:end_after]),
    )


def noqa_edit(text: str, line: int, code: str, codec) -> Optional[types.TextEdit]:
    """The edit that silences `code` for a finding on the 1-based `line`, as `--add-noqa` writes it:
    the code added to the line's `# noqa: ...` comment, or a new comment at its end (at the end of
    the string or continuation it starts, where the comment cannot end that line). None where a
    comment already silences it."""
    edits = noqa_edits.insertions(text, [(line, code)])
    if not edits:
        return None
    (edit,) = edits
    where = position(split_lines(text)[edit.line - 1], edit.line - 1, edit.column + 1, codec)
    return types.TextEdit(range=types.Range(start=where, end=where), new_text=edit.text)
