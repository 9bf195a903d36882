"""Text output. `full` (the default): `path:line:col: CODE summary`, then the explanation, the related
locations and the fix, indented below it (source lines on a terminal). `concise`: the first line
alone, under ~120 characters, as ruff's concise format. `grouped`: ruff's grouped format, the file's
name once and `line:col CODE summary` under it. `--statistics` counts by rule instead. Then, as
ruff prints them, the fixes by file and rule (`--show-fixes`) and the summary."""
from __future__ import annotations

from typing import Dict, List, Optional

from ..findings import UNSAFE, Mode
from .model import RunResult, applicable


def _location(path: str, line: int, column: int, cell: Optional[int]) -> str:
    return f"{path}:cell {cell}:{line}:{column}" if cell is not None else f"{path}:{line}:{column}"


def render(
    result: RunResult, show_source: bool = False, sources: Optional[Dict[str, List[str]]] = None, dry_run: bool = False,
    concise: bool = False, statistics: bool = False, quiet: bool = False, grouped: bool = False,
    show_fixes: bool = False,
) -> str:
    """`dry_run` (or `result.mode == Mode.DIFF`): the fixes were only shown (`--diff`), so the summary must
    not say they were made. `quiet`: the findings and errors, no summary."""
    out: List[str] = []
    if statistics:
        out.extend(statistics_lines(result))
    elif grouped:
        out.extend(grouped_lines(result))
    else:
        for finding in result.findings:
            out.extend(_finding_lines(finding, result, concise, (sources or {}).get(finding.path) if show_source else None))
    for path, message in result.errors:
        out.append(f"{path}: error: {message}")
    if show_fixes and not quiet:
        out.extend(fixes_lines(result, dry_run or result.mode == Mode.DIFF))
    if not quiet:
        out.extend(summary_lines(result, dry_run or result.mode == Mode.DIFF))
        if not result.findings and not result.errors and result.mode == Mode.CHECK:
            out.append("All checks passed!")
    return "\n".join(out)


def _finding_lines(finding, result: RunResult, concise: bool, lines: Optional[List[str]]) -> List[str]:
    marker = "[*] " if _applicable(finding, result) else ""
    head = f"{_location(finding.path, finding.line, finding.column, finding.cell)}: {finding.code} {marker}"
    out = [head + (finding.summary or finding.message)]
    if concise:
        return out
    if lines and finding.cell is None:
        out.extend(_snippet(lines, finding.line, finding.column))
    if finding.summary:
        out.append(f"  {finding.message}")
    for related in finding.related:
        out.append(f"  --> {_location(related.path, related.line, related.column, related.cell)}: {related.role}: {related.message}")
        if lines and finding.cell is None and related.path == finding.path:
            out.extend(_snippet(lines, related.line, related.column))
    fix = finding.fix
    if fix is not None and fix.available:
        unsafe = " (unsafe)" if fix.applicability == UNSAFE else ""
        out.append(f"  = fix{unsafe}: {fix.message}")
    return out


def _applicable(finding, result: RunResult) -> bool:
    return applicable(finding, result.unsafe_fixes)


def grouped_lines(result: RunResult) -> List[str]:
    """As ruff's grouped format: `path:`, then `  line:col CODE [*] summary` for each of its findings
    (lines right-aligned, columns left-aligned; `cell 3:2:1` in a notebook), a blank line after each file."""
    by_path: Dict[str, List] = {}
    for finding in result.findings:
        by_path.setdefault(finding.path, []).append(finding)
    out: List[str] = []
    for path, findings in by_path.items():
        rows = [f"cell {f.cell}:{f.line}" if f.cell is not None else str(f.line) for f in findings]
        row_width = max(len(row) for row in rows)
        column_width = max(len(str(f.column)) for f in findings)
        out.append(f"{path}:")
        for row, finding in zip(rows, findings):
            marker = "[*] " if _applicable(finding, result) else ""
            out.append(f"  {row:>{row_width}}:{finding.column:<{column_width}} {finding.code} {marker}"
                       f"{finding.summary or finding.message}")
        out.append("")
    return out


def fixes_lines(result: RunResult, dry_run: bool = False) -> List[str]:
    """`--show-fixes`, as ruff prints it: the fixes made (`--fix`), that would be made (`--diff`), or
    that `--fix` would make (checking), per file and rule, most frequent first; nothing when none.

        Fixed 2 findings:
        - train.py:
            2 × DDP101 (optimizer-before-move)
    """
    if result.mode in (Mode.FIX, Mode.DIFF) or dry_run:
        table = result.fixed_by_file
        label = "Would fix" if dry_run else "Fixed"
    else:
        table = {}
        for finding in result.findings:
            if _applicable(finding, result):
                counts = table.setdefault(finding.path, {})
                counts[finding.code] = counts.get(finding.code, 0) + 1
        label = "Fixes available for"
    total = sum(sum(counts.values()) for counts in table.values())
    if not total:
        return []
    from ..rules import RULES

    width = len(str(max(max(counts.values()) for counts in table.values() if counts)))
    out = ["", f"{label} {_plural(total, 'finding')}:"]
    for path, counts in sorted(table.items()):
        if not counts:
            continue
        out.append(f"- {path}:")
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            out.append(f"    {count:>{width}} \u00d7 {code} ({RULES[code].name})")
    out.append("")
    return out


def statistics_lines(result: RunResult) -> List[str]:
    """As ruff's `--statistics`: count, code, [*] when every one of them is fixable, and the name."""
    by_code: Dict[str, List] = {}
    for finding in result.findings:
        by_code.setdefault(finding.code, []).append(finding)
    width = max((len(str(len(v))) for v in by_code.values()), default=1)
    out = []
    for code, findings in sorted(by_code.items(), key=lambda item: (-len(item[1]), item[0])):
        fixable = "[*]" if all(_applicable(f, result) for f in findings) else "[ ]"
        out.append(f"{len(findings):>{width}}\t{code}\t{fixable} {findings[0].name}")
    return out


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def summary_lines(result: RunResult, dry_run: bool = False) -> List[str]:
    """Like ruff's: `Found 3 findings in 1 file (2 fixed, 1 remaining).` after a fix, where 3 is what
    was fixed plus what is still reported; then the fixes the run left out:
    `[*] 2 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).`
    when checking, `1 hidden fix can be enabled with the `--unsafe-fixes` option.` when fixing."""
    fixing = result.mode in (Mode.FIX, Mode.DIFF) or dry_run or result.fixed > 0
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
