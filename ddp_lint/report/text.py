"""Text output: `path:line:col: CODE message`, related locations below; source lines on a terminal."""
from __future__ import annotations

from typing import Dict, List, Optional

from .model import DIFF, FIX, RunResult


def _location(path: str, line: int, column: int, cell: Optional[int]) -> str:
    return f"{path}:cell {cell}:{line}:{column}" if cell is not None else f"{path}:{line}:{column}"


def render(
    result: RunResult, show_source: bool = False, sources: Optional[Dict[str, List[str]]] = None, dry_run: bool = False
) -> str:
    """`dry_run` (or `result.mode == DIFF`): the fixes were only shown (`--diff`), so the summary must
    not say they were made."""
    out: List[str] = []
    for finding in result.findings:
        out.append(f"{_location(finding.path, finding.line, finding.column, finding.cell)}: {finding.code} {finding.message}")
        lines = (sources or {}).get(finding.path) if show_source else None
        if lines and finding.cell is None:
            out.extend(_snippet(lines, finding.line, finding.column))
        for related in finding.related:
            out.append(f"  --> {_location(related.path, related.line, related.column, getattr(related, 'cell', None))}: {related.role}: {related.message}")
            if lines and finding.cell is None:
                out.extend(_snippet(lines, related.line, related.column))
    for path, message in result.errors:
        out.append(f"{path}: error: {message}")
    out.extend(summary_lines(result, dry_run or result.mode == DIFF))
    return "\n".join(out)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def summary_lines(result: RunResult, dry_run: bool = False) -> List[str]:
    """Like ruff's: `Found 3 findings in 1 file (2 fixed, 1 remaining).` after a fix, where 3 is what
    was fixed plus what is still reported; then the fixes the run left out:
    `[*] 2 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).`
    when checking, `1 hidden fix can be enabled with the `--unsafe-fixes` option.` when fixing."""
    fixing = result.mode in (FIX, DIFF) or dry_run or result.fixed > 0
    remaining = len(result.findings)
    total = remaining + result.fixed if fixing else remaining
    tail = f"Found {_plural(total, 'finding')} in {_plural(result.files, 'file')}"
    if fixing and result.fixed:
        if dry_run:
            tail += f" ({result.fixed} would be fixed, {remaining} would remain)"
        else:
            tail += f" ({result.fixed} fixed, {remaining} remaining)"
    if result.errors:
        tail += f"; {_plural(len(result.errors), 'error')}"
    lines = [tail + "."] if total or result.errors else []
    hidden = result.hidden_unsafe_fixes()
    hidden_text = f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option"
    if fixing:
        if hidden:
            lines.append(hidden_text + ".")
        return lines
    fixable = result.fixable()
    if fixable:
        lines.append(f"[*] {fixable} fixable with the `--fix` option" + (f" ({hidden_text})." if hidden else "."))
    elif hidden:
        lines.append(f"No fixes available ({hidden_text}).")
    return lines


def _snippet(lines: List[str], line: int, column: int) -> List[str]:
    if not 1 <= line <= len(lines):
        return []
    text = lines[line - 1].rstrip("\r\n")
    width = len(str(line))
    return [f"   {' ' * width} |", f"   {line} | {text}", f"   {' ' * width} | {' ' * (column - 1)}^"]
