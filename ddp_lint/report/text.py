"""Text output: `path:line:col: CODE message`, related locations below; source lines on a terminal."""
from __future__ import annotations

from typing import Dict, List, Optional

from .model import RunResult


def _location(path: str, line: int, column: int, cell: Optional[int]) -> str:
    return f"{path}:cell {cell}:{line}:{column}" if cell is not None else f"{path}:{line}:{column}"


def render(
    result: RunResult, show_source: bool = False, sources: Optional[Dict[str, List[str]]] = None, dry_run: bool = False
) -> str:
    """`dry_run`: the fixes were only shown (`--diff`), so the summary must not say they were made."""
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
    summary = result.summary()
    tail = f"Found {summary['findings']} finding{'s' if summary['findings'] != 1 else ''} in {result.files} file{'s' if result.files != 1 else ''}"
    if result.fixed:
        tail += f" ({result.fixed} {'would be ' if dry_run else ''}fixed)"
    if result.errors:
        tail += f"; {len(result.errors)} error{'s' if len(result.errors) != 1 else ''}"
    if result.findings or result.errors or result.fixed:
        out.append(tail + ".")
    return "\n".join(out)


def _snippet(lines: List[str], line: int, column: int) -> List[str]:
    if not 1 <= line <= len(lines):
        return []
    text = lines[line - 1].rstrip("\r\n")
    width = len(str(line))
    return [f"   {' ' * width} |", f"   {line} | {text}", f"   {' ' * width} | {' ' * (column - 1)}^"]
