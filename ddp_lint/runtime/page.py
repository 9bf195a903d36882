"""The HTML report of `ddp-lint verify --report` and `ddp-lint run --report`: one self-contained file.

No network and no JavaScript: the charts are inline SVG (`charts`), the numbers come from the ranks'
trace records (`series`), and everything taken from the user's code, paths or output is escaped.
A `verify` page overlays the original and the fixed run; a `run` page shows the one run.
"""
from __future__ import annotations

import html
import os
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence

from . import series
from .charts import FIXED, ORIGINAL, Line, Style, line_chart
from .findings import RuntimeFinding
from .report import TAIL_SHOWN, RunReport, exit_status, script_status
from .verify import NEVER_CHANGED, StaticFinding, VerifyResult, describe, fixed_display, model_status

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #1d1d1f; margin: 24px auto; max-width: 1000px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 8px; } h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #ccc; }
h3 { font-size: 15px; margin: 16px 0 4px; } h4 { font-size: 14px; margin: 12px 0 4px; }
code, pre { font: 12.5px/1.4 ui-monospace, Menlo, Consolas, monospace; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 8px; overflow-x: auto; white-space: pre-wrap; }
.verdict { font-size: 16px; padding: 8px 12px; border-left: 6px solid; margin: 8px 0; }
.verdict.ok { border-color: #1e7d32; background: #eef7ee; } .verdict.bad { border-color: #b3261e; background: #fbeeed; }
table { border-collapse: collapse; margin: 6px 0; } th, td { border: 1px solid #ccc; padding: 3px 8px;
  text-align: left; vertical-align: top; } th { background: #f0f0f0; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 12px; }
figure.chart-box { margin: 0; break-inside: avoid; page-break-inside: avoid; }
figure.chart-box figcaption { font-weight: 600; font-size: 13px; }
svg.chart { width: 100%; max-width: 560px; height: auto; background: #fff; }
.rank { break-inside: avoid; page-break-inside: avoid; }
.diff .add { color: #1b5e20; background: #e8f5e9; } .diff .del { color: #8e1b13; background: #fdecea; }
.diff .hunk { color: #555; }
.finding { margin: 6px 0 10px; break-inside: avoid; } .finding .where { font-family: ui-monospace, monospace; }
.source { margin: 2px 0 2px 16px; } .muted { color: #666; }
@media print {
  body { margin: 0; max-width: none; font-size: 11pt; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  h2 { break-after: avoid; page-break-after: avoid; }
  pre { white-space: pre-wrap; word-break: break-all; }
  section { break-inside: auto; }
}
"""

_CSP = "default-src 'none'; style-src 'unsafe-inline'"
RUN = Style("#333333", "", "circle")


@dataclass
class _Column:
    """One run on the page: the original, the fixed copy, or `ddp-lint run`'s only run."""
    label: str
    style: Style
    report: RunReport
    static: Optional[List[StaticFinding]]  # None: the static engine was not asked
    path: str = ""  # the file its static findings' lines are in, as displayed


def _e(text: object) -> str:
    return html.escape(str(text))


class _Sources:
    """Lines of the files findings point at: texts known to the caller first (the fixed copy is gone), else disk."""

    def __init__(self, known: Dict[str, str]) -> None:
        self._lines: Dict[str, Optional[List[str]]] = {p: t.splitlines() for p, t in known.items()}

    def line(self, path: str, number: int) -> Optional[str]:
        if path not in self._lines:
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    self._lines[path] = handle.read().splitlines()
            except OSError:
                self._lines[path] = None
        lines = self._lines[path]
        if lines is None or not 1 <= number <= len(lines):
            return None
        return lines[number - 1]

    def quote(self, path: str, number: int) -> str:
        text = self.line(path, number)
        if text is None:
            return ""
        return f'<pre class="source"><code>{number:>4} | {_e(text)}</code></pre>'


# ------------------------------------------------------------------------------------- sections
def _head(title: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            # Nothing runs and nothing is fetched, whatever a quoted line holds: the page is its own proof.
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>")


def _header(title: str, verdict: str, ok: bool, command: str, facts: Sequence[str]) -> str:
    out = [f"<header><h1>{_e(title)}</h1>",
           f'<p class="verdict {"ok" if ok else "bad"}" id="verdict"><strong>Verdict:</strong> {_e(verdict)}</p>']
    if facts:
        out.append(f'<p class="muted">{" · ".join(_e(f) for f in facts)}</p>')
    if command:
        out.append(f'<p>To reproduce:</p><pre id="command"><code>{_e(command)}</code></pre>')
    out.append("</header>")
    return "".join(out)


def _checksum(report: RunReport) -> str:
    trace = report.traces.get(0) or next(iter(report.traces.values()), None)
    final = trace.final() if trace else None
    if final is None:
        return "-"
    note = " (unchanged)" if model_status(report) == NEVER_CHANGED else ""
    return f"{float(final['sum']):.6f} #{str(final['hash'])[:8]}{note}"  # type: ignore[arg-type]


def _summary(columns: Sequence[_Column]) -> str:
    rows = [
        ("static findings", [", ".join(f"{f.code} line {f.line}" for f in c.static) or "none"
                             if c.static is not None else "(not analysed)" for c in columns]),
        ("runtime findings", [", ".join(f"{f.code} line {f.line} ({f.severity})" for f in c.report.findings) or "none"
                              for c in columns]),
        ("run", [script_status(c.report) for c in columns]),
        ("model", [model_status(c.report) or "-" for c in columns]),
        ("in short", [describe(c.report) for c in columns]),
        ("param checksum (rank 0)", [_checksum(c.report) for c in columns]),
    ]
    out = ['<section id="summary"><h2>Summary</h2><table><tr><th></th>']
    out.extend(f"<th>{_e(c.label)}</th>" for c in columns)
    out.append("</tr>")
    for label, cells in rows:
        out.append(f"<tr><th>{_e(label)}</th>" + "".join(f"<td>{_e(cell)}</td>" for cell in cells) + "</tr>")
    out.append("</table></section>")
    return "".join(out)


def _rank_groups(columns: Sequence[_Column]) -> List[tuple]:
    """(heading, ranks) per node of the first column's job, any rank no node names last; one group on one machine."""
    ranks = series.ranks_of([c.report for c in columns])
    nodes = next((c.report.nodes for c in columns if c.report.nodes), [])
    if not nodes:
        return [("", ranks)]
    groups = []
    placed: set = set()
    for node in nodes:
        host = "" if node.host == "?" else f" ({node.host})"
        missing = f": {node.missing}, its ranks' records are not in this report" if node.missing else ""
        mine = sorted(node.ranks)
        placed.update(mine)
        groups.append((f"node {node.node}{host}{missing}", [r for r in mine if r in ranks]))
    rest = [r for r in ranks if r not in placed]
    if rest:
        groups.append(("ranks no node named", rest))
    return groups


def _rank_label(columns: Sequence[_Column], rank: int) -> str:
    for column in columns:
        if rank in column.report.rank_names:
            return column.report.rank_label(rank)
    return f"rank {rank}"


def _charts(columns: Sequence[_Column]) -> str:
    out = ['<section id="ranks"><h2>Per rank: loss and parameter change per step</h2>',
           '<p class="muted">Loss: the value the script called <code>backward()</code> on before each step of its '
           "training loop's optimizer. Parameter change: the L2 norm of what that step changed in the parameters of "
           "the model that ran forward (0: the model did not move). Steps counted from 0.</p>"]
    for heading, ranks in _rank_groups(columns):
        if heading:
            out.append(f'<h3 class="node">{_e(heading)}</h3>')
        for rank in ranks:
            label = _rank_label(columns, rank)
            traces = [(c, c.report.traces.get(rank)) for c in columns]
            loss = [Line(c.label, series.loss(t) if t else series.Points([], []), c.style) for c, t in traces]
            change = [Line(c.label, series.update_norm(t) if t else series.Points([], []), c.style) for c, t in traces]
            out.append(f'<div class="rank" data-rank="{rank}"><h4>{_e(label)}</h4><div class="charts">')
            out.append(line_chart(f"{label}: loss", "loss", loss, kind="loss", caption="loss"))
            out.append(line_chart(f"{label}: parameter change", "update L2 norm", change, zero_based=True,
                                  kind="update", caption="parameter change"))
            out.append("</div></div>")
        if not ranks:
            out.append('<p class="muted">No rank here recorded a step.</p>')
    out.append("</section>")
    return "".join(out)


def _divergence(columns: Sequence[_Column]) -> str:
    lines = [Line(c.label, series.rank_spread(c.report), c.style) for c in columns]
    out = ['<section id="divergence"><h2>Ranks apart: replicated parameters across ranks</h2>']
    if not any(line.points for line in lines):
        out.append('<p class="muted">Nothing to compare: no step where two or more ranks held replicated parameters '
                   "(one rank, or no DDP or ZeRO).</p></section>")
        return "".join(out)
    out.append('<p class="muted">Per step, the largest difference across ranks of a replicated parameter (under DDP '
               "or stepped by ZeRO), compared by its sum as the monitor's cross-rank check compares it: 0 while the "
               "ranks agree.</p>")
    out.append(line_chart("max difference across ranks", "spread across ranks", lines,
                          zero_based=True, kind="divergence"))
    out.append("</section>")
    return "".join(out)


def _static_findings(column: _Column, sources: _Sources) -> str:
    script = column.path
    if column.static is None:
        return ""
    out = [f"<h3>{_e(column.label)}: static findings</h3>"]
    if not column.static:
        return out[0] + "<p>none</p>"
    for f in column.static:
        fix = f' <span class="muted">(no automatic fix: {_e(f.no_fix)})</span>' if f.no_fix else ""
        out.append(f'<div class="finding static" data-code="{_e(f.code)}"><span class="where">{_e(script)}:{f.line}'
                   f"</span>: <strong>{_e(f.code)}</strong> [{_e(f.severity)}] {_e(f.message)}{fix}"
                   f"{sources.quote(script, f.line)}</div>")
    return "".join(out)


def _runtime_findings(column: _Column, sources: _Sources) -> str:
    out = [f"<h3>{_e(column.label)}: runtime findings</h3>"]
    if not column.report.findings:
        return out[0] + "<p>none</p>"
    for f in column.report.findings:
        out.append(_runtime_finding(f, column.report, sources))
    return "".join(out)


def _runtime_finding(f: RuntimeFinding, report: RunReport, sources: _Sources) -> str:
    ranks = ", ".join(f"{r} ({report.rank_names[r]})" if r in report.rank_names else str(r) for r in f.ranks)
    when = f"first at step {f.step}" if f.step is not None else "before any step"
    out = [f'<div class="finding runtime" data-code="{_e(f.code)}"><span class="where">{_e(f.path)}:{f.line}</span>: '
           f"<strong>{_e(f.code)}</strong> [{_e(f.severity)}] {_e(f.message)}", sources.quote(f.path, f.line)]
    for rel in f.related:
        out.append(f'<div class="related"><span class="where">{_e(rel.path)}:{rel.line}</span>: {_e(rel.note)}'
                   f"{sources.quote(rel.path, rel.line)}</div>")
    out.extend(f"<div>also: {_e(text)}</div>" for text in f.evidence)
    out.append(f'<div class="muted">seen on {"rank" if len(f.ranks) == 1 else "ranks"} {_e(ranks)}, {when}</div></div>')
    return "".join(out)


def _findings(columns: Sequence[_Column], sources: _Sources) -> str:
    out = ['<section id="findings"><h2>Findings</h2>']
    for column in columns:
        out.append(_static_findings(column, sources))
        out.append(_runtime_findings(column, sources))
    out.append("</section>")
    return "".join(out)


def _diff(lines: Sequence[str]) -> str:
    out = ['<section id="fix"><h2>The fix</h2>']
    if not lines:
        out.append("<p>No fix was applied.</p></section>")
        return "".join(out)
    out.append('<pre class="diff">')
    for line in lines:
        kind = ("hunk" if line.startswith("@@") else "add" if line.startswith("+") and not line.startswith("+++")
                else "del" if line.startswith("-") and not line.startswith("---") else "")
        out.append(f'<span class="{kind}">{_e(line)}</span>\n' if kind else f"{_e(line)}\n")
    out.append("</pre></section>")
    return "".join(out)


def _outputs(columns: Sequence[_Column]) -> str:
    failed = [c for c in columns if c.report.failed and c.report.output_tail]
    if not failed:
        return ""
    out = ['<section id="output"><h2>Last lines of output</h2>']
    for column in failed:
        tail = "\n".join(column.report.output_tail[-TAIL_SHOWN:])
        out.append(f"<h3>{_e(column.label)}</h3><pre><code>{_e(tail)}</code></pre>")
    out.append("</section>")
    return "".join(out)


def _nodes(columns: Sequence[_Column]) -> str:
    with_nodes = [c for c in columns if c.report.nodes]
    if not with_nodes:
        return ""
    out = ['<section id="nodes"><h2>Nodes</h2>']
    for column in with_nodes:
        out.append(f"<h3>{_e(column.label)}</h3><table><tr><th>node</th><th>host</th><th>ranks</th>"
                   "<th>exit code</th><th>status</th></tr>")
        for n in column.report.nodes:
            ranks = ", ".join(column.report.rank_label(r) for r in n.ranks) or "-"
            code = "-" if n.exit_code is None else n.exit_code
            out.append(f"<tr><td>{n.node}</td><td>{_e(n.host)}</td><td>{_e(ranks)}</td>"
                       f"<td>{code}</td><td>{_e(n.missing or 'reported')}</td></tr>")
        out.append("</table>")
    out.append("</section>")
    return "".join(out)


def _page(title: str, verdict: str, ok: bool, command: str, facts: Sequence[str], columns: Sequence[_Column],
          diff: Optional[Sequence[str]], sources: _Sources, notes: Iterable[str] = ()) -> str:
    parts = [_head(title), _header(title, verdict, ok, command, facts)]
    parts.extend(f'<p class="muted">Note: {_e(n)}</p>' for n in notes)
    parts += [_summary(columns), _charts(columns), _divergence(columns), _findings(columns, sources)]
    if diff is not None:
        parts.append(_diff(diff))
    parts += [_outputs(columns), _nodes(columns), "</body></html>\n"]
    return "".join(parts)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 'es' if word.endswith('s') else 's'}"


# ------------------------------------------------------------------------------------- public
def verify_page(result: VerifyResult, command: str = "") -> str:
    """The report of one `ddp-lint verify`: original and fixed overlaid."""
    fixed_path = fixed_display(result.script)
    columns = [_Column("original", ORIGINAL, result.original.report, result.original.static, result.script)]
    if result.fixed is not None:
        columns.append(_Column("fixed", FIXED, result.fixed.report, result.fixed.static, fixed_path))
    sources = _Sources({result.script: result.source, fixed_path: result.fixed_source}
                       if result.fixed_source else {result.script: result.source})
    report = result.original.report
    facts = [_plural(report.nproc, "process"), _plural(result.applied, "fix") + " applied",
             _plural(result.steps, "step")]
    if report.nodes:
        facts.insert(1, _plural(len(report.nodes), "node"))
    return _page(f"ddp-lint verify {result.script}", result.verdict, result.exit_code == 0, command, facts,
                 columns, result.diff, sources, result.notes)


def run_page(report: RunReport, static: Optional[List[StaticFinding]] = None, command: str = "",
             notes: Iterable[str] = ()) -> str:
    """The report of one `ddp-lint run`: the one run, no fixed column."""
    columns = [_Column("run", RUN, report, static, report.script)]
    facts = [_plural(report.nproc, "process"), _plural(report.steps, "step")]
    if report.nodes:
        facts.insert(1, _plural(len(report.nodes), "node"))
    verdict = f"{_plural(report.n_errors, 'error')}, {_plural(report.n_warnings, 'warning')}; {script_status(report)}"
    return _page(f"ddp-lint run {report.script}", verdict, exit_status(report) == 0, command, facts, columns,
                 None, _Sources({}), notes)


def write_page(path: str, text: str) -> None:
    """Write the page whole (a reader never sees half a report): to a sibling file, then renamed over `path`."""
    path = os.path.abspath(path)
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(partial, path)
