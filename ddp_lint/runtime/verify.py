"""`ddp-lint verify`: fix a copy of the script, run both under the monitor, and compare them.

The static engine and fixer are imported lazily: they are the other half of ddp-lint and this
module only needs their public entry points (`lint_source`, `fix_source`).
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import difflib
import json
import os
import re
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .findings import RuntimeFinding
from .job import JobOutcome, NodeStatus, run_node
from .launcher import LaunchResult, LaunchSpec, launch
from .nodes import split_endpoint
from .report import RunReport, build_report, display_path, report_json

NEVER_CHANGED = "model never changed"


class VerifyUnavailable(Exception):
    """The static engine or fixer cannot be imported."""


# `verify` found something to fix and fixed nothing (every fix refused): it compared no runs, so it
# proved nothing, whatever the original run did.
NOT_VERIFIED_EXIT_CODE = 4


@dataclass
class StaticFinding:
    code: str
    line: int
    severity: str
    message: str
    no_fix: str = ""  # why the fixer would not fix it (empty when it has a fix)

    def to_json(self) -> Dict[str, object]:
        return dataclasses.asdict(self)


@dataclass
class Side:
    label: str
    static: List[StaticFinding]
    report: RunReport

    @property
    def errors(self) -> List[RuntimeFinding]:
        return [f for f in self.report.findings if f.is_error]

    @property
    def clean(self) -> bool:
        return not self.errors and not self.report.failed and model_status(self.report) != NEVER_CHANGED


@dataclass
class VerifyResult:
    script: str
    applied: int
    diff: List[str]
    original: Side
    fixed: Optional[Side]
    verdict: str
    equivalent: bool
    steps: int = 0
    notes: List[str] = field(default_factory=list)
    # Multi-node: each side's node run (node 0 sends the exit code through them; see job.finish).
    outcomes: List[JobOutcome] = field(default_factory=list)
    # Both texts, for the HTML report's quoted lines (the fixed copy is removed after the run).
    source: str = ""
    fixed_source: str = ""

    @property
    def exit_code(self) -> int:
        """0 when the fixed script (or the original, if nothing needed fixing) runs clean; 4 when there
        was something to fix and no fix was applied (nothing was verified)."""
        if self.fixed is None and self.original.static:
            return NOT_VERIFIED_EXIT_CODE
        side = self.fixed if self.fixed is not None else self.original
        return 0 if side.clean else 1


def _static_tools(script: str) -> Tuple[Any, Any]:
    """The pipeline's check and the fixer, with the settings of the configuration that governs the
    script (found as the CLI finds it; `# noqa` honoured as the CLI honours it)."""
    try:
        from ddp_lint.config import ConfigError
        from ddp_lint.documents.python import PythonDocument, decode
        from ddp_lint.fixer.apply import fix_source
        from ddp_lint.pipeline import check
        from ddp_lint.workspace.configs import Resolver
    except ImportError as exc:
        raise VerifyUnavailable(f"ddp-lint verify needs the static engine and fixer: {exc}") from None
    try:
        settings = Resolver().for_path(script).settings
    except ConfigError as exc:
        raise VerifyUnavailable(f"ddp-lint verify: configuration error: {exc}") from None

    def lint_source(source: str, path: str) -> list:
        return check(PythonDocument(path, decode(source.encode("utf-8"))), settings)

    def fix(source: str, path: str, unsafe: bool) -> Any:
        return fix_source(source, path, unsafe, settings)

    return lint_source, fix


def _static(lint_source: Any, source: str, path: str) -> List[StaticFinding]:
    found = lint_source(source, path)
    return sorted(
        (StaticFinding(f.code, int(f.line), str(getattr(f, "severity", "")), str(f.message), _no_fix(f)) for f in found),
        key=lambda f: (f.line, f.code),
    )


def fixed_display(shown: str) -> str:
    """How findings, the diff and the report name the fixed copy of the script shown as `shown`."""
    return f"{shown} [fixed]"


def _no_fix(finding: Any) -> str:
    fix = getattr(finding, "fix", None)
    if fix is not None and not fix.available:
        return fix.reason or "no automatic fix"
    return ""


def model_status(report: RunReport) -> Optional[str]:
    """Whether the parameters the model used ever changed, from the ranks' first and last fingerprints."""
    counts = [t.params_changed() for t in report.traces.values()]
    counts = [c for c in counts if c is not None]
    if not counts:
        return None
    if all(changed == 0 for changed, _ in counts):
        return NEVER_CHANGED
    if any(changed < total for changed, total in counts):
        worst = min(counts, key=lambda c: c[0] / max(c[1], 1))
        return f"part of the model never trained ({worst[0]} of {worst[1]} parameters changed)"
    return "trains"


def describe(report: RunReport) -> str:
    """A few words on how one side ran: its worst finding, whether it crashed, whether it trained."""
    errors = sorted((f for f in report.findings if f.is_error), key=lambda f: f.code)
    status = model_status(report)
    parts: List[str] = []
    if errors:
        parts.append(errors[0].outcome or errors[0].code)
    if report.timed_out:
        parts.append(f"timed out after {report.timeout:g}s")
    elif report.failed:
        where = ""
        rank = min(report.in_step) if report.in_step else None
        if rank is not None:
            where = f" at step {report.in_step[rank]['step']}"
        error = report.first_error()
        parts.append(f"crashed{where}" + (f" ({error})" if error else f" (exit code {report.exit_code})"))
    elif errors:
        if status and status != "trains":
            parts.append(status)
    else:
        # A script that never stepped an optimizer did not train; say what was seen, not "trains".
        no_step = report.steps == 0 and not any(t.steps for t in report.traces.values())
        parts.append("no optimizer step ran" if no_step else "trains" if status in (None, "trains") else status)
        warnings = len(report.findings)
        parts.append(f"{warnings} finding{'s' if warnings != 1 else ''}")
    return ", ".join(parts)


def _final_hashes(report: RunReport) -> Dict[int, Optional[str]]:
    out: Dict[int, Optional[str]] = {}
    for rank, trace in report.traces.items():
        final = trace.final()
        out[rank] = str(final["hash"]) if final else None
    return out


def bit_identical(a: RunReport, b: RunReport) -> bool:
    ha, hb = _final_hashes(a), _final_hashes(b)
    return bool(ha) and ha == hb and all(h is not None for h in ha.values())


def verdict_for(original: Side, fixed: Optional[Side], applied: int, steps: int) -> Tuple[str, bool]:
    if fixed is None:
        if not original.static:
            return f"no fix applied (nothing to fix); original: {describe(original.report)}", False
        refused = next((f for f in original.static if f.no_fix), None)
        why = f": line {refused.line}: {refused.no_fix}" if refused is not None else ""
        return (f"not verified: no fix applied (no automatic fix for these findings{why}), so nothing was compared; "
                f"original: {describe(original.report)}"), False
    if original.clean and fixed.clean and bit_identical(original.report, fixed.report):
        return f"equivalent: bit-identical parameters after {steps} step{'s' if steps != 1 else ''}", True
    return f"original: {describe(original.report)}; fixed: {describe(fixed.report)}", False


def run_verify(script: str, script_args: List[str], spec: LaunchSpec) -> VerifyResult:
    """Fix a copy of `script`, run both under the same monitor settings, and compare."""
    script = os.path.abspath(script)
    lint_source, fix_source = _static_tools(script)
    with open(script, encoding="utf-8") as handle:
        source = handle.read()
    shown = display_path(script)
    try:
        fix = fix_source(source, script, True)
        static_original = _static(lint_source, source, script)
    except Exception as exc:  # a static-analysis failure is reported in one line, not as a traceback
        raise VerifyUnavailable(f"ddp-lint verify: the static fixer failed on {shown}: "
                                f"{type(exc).__name__}: {exc}") from None
    applied = int(getattr(fix, "applied", 0))
    fixed_source = str(getattr(fix, "source", source))
    notes: List[str] = []
    run_fixed = applied > 0 and fixed_source != source
    fixed_path, workdir = _fixed_copy_path(script) if run_fixed else ("", None)
    if workdir is not None:
        notes.append(f"the fixed copy ran from a temporary folder ({os.path.dirname(script)} is not writable): "
                     f"a crash of the fixed run that reads files beside the script comes from that relocation, "
                     f"not from the fix")
    try:
        if run_fixed:
            with open(fixed_path, "w", encoding="utf-8") as handle:
                handle.write(fixed_source)
        # Beside the original, the fixed copy finds the files and modules the original finds
        # (`Path(__file__).parent / "cfg.txt"`); from a temporary folder only the modules.
        extra = [os.path.dirname(script), *spec.config.extra_sys_path] if workdir else list(spec.config.extra_sys_path)
        # An interrupt stops both runs at once (the launches run in threads that would otherwise be
        # waited for), so the fixed copy is removed promptly.
        stop = spec.stop or threading.Event()
        original_spec = dataclasses.replace(
            spec, script=script, script_args=list(script_args), stop=stop, stop_grace=0.0,
            config=dataclasses.replace(spec.config, trace=True))
        fixed_spec = dataclasses.replace(
            spec, script=fixed_path, script_args=list(script_args), stop=stop, stop_grace=0.0,
            config=dataclasses.replace(spec.config, trace=True, extra_sys_path=extra))
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            original_future = pool.submit(_launch_side, original_spec)
            fixed_future = pool.submit(_launch_side, fixed_side_spec(fixed_spec)) if run_fixed else None
            try:
                original_run, original_nodes, original_outcome = original_future.result()
                fixed_run, fixed_nodes, fixed_outcome = (fixed_future.result() if fixed_future is not None
                                                         else (None, [], None))
            except BaseException:
                stop.set()
                raise
        outcomes = [o for o in (original_outcome, fixed_outcome) if o is not None]
        original = Side("original", static_original,
                        build_report(script, _world(spec, original_nodes), original_run, spec.timeout,
                                     nodes=original_nodes))
        fixed: Optional[Side] = None
        if fixed_run is not None:
            try:
                static_fixed = _static(lint_source, fixed_source, script)
            except Exception as exc:
                raise VerifyUnavailable(f"ddp-lint verify: the static engine failed on the fixed copy: "
                                        f"{type(exc).__name__}: {exc}") from None
            if workdir is None:
                _same_fixed_copy(fixed_run.records, fixed_path)
            fixed_report = build_report(fixed_path, _world(spec, fixed_nodes), fixed_run, spec.timeout,
                                        path_map={fixed_path: fixed_display(shown)}, nodes=fixed_nodes)
            fixed = Side("fixed", static_fixed, fixed_report)
    finally:
        # Also on an error or an interrupt (SIGINT, and SIGTERM: the CLI turns it into one).
        if fixed_path:
            try:
                os.remove(fixed_path)
            except OSError:
                pass
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
    diff = list(difflib.unified_diff(source.splitlines(), fixed_source.splitlines(),
                                     f"{shown}", fixed_display(shown), lineterm="", n=1))
    steps = max(original.report.steps, fixed.report.steps if fixed else 0)
    verdict, equivalent = verdict_for(original, fixed, applied, steps)
    if notes and fixed is not None and fixed.report.failed:
        verdict += f" ({notes[0]})"
    return VerifyResult(shown, applied, diff, original, fixed, verdict, equivalent, steps, notes, outcomes,
                        source, fixed_source if fixed is not None else "")


def static_findings(script: str) -> List[StaticFinding]:
    """The static findings of one script, as `verify` lists them (for `ddp-lint run --report`)."""
    lint_source, _ = _static_tools(script)
    with open(script, encoding="utf-8") as handle:
        source = handle.read()
    try:
        return _static(lint_source, source, script)
    except Exception as exc:  # reported in one line, as verify does
        raise VerifyUnavailable(f"the static engine failed on {display_path(script)}: "
                                f"{type(exc).__name__}: {exc}") from None


def fixed_side_spec(spec: LaunchSpec) -> LaunchSpec:
    """Multi-node: the fixed copy's run joins its own rendezvous, at the rendezvous port + 2 (and the
    report port + 2), with the id `ID-fixed`, since both sides run at once."""
    if spec.nodes is None:
        return spec
    host, port = split_endpoint(spec.nodes.rdzv_endpoint)
    nodes = dataclasses.replace(spec.nodes, rdzv_endpoint=f"{host}:{port + 2}", rdzv_id=f"{spec.nodes.rdzv_id}-fixed",
                                report_port=spec.nodes.collector_port + 2)
    return dataclasses.replace(spec, nodes=nodes)


def _launch_side(spec: LaunchSpec) -> Tuple[LaunchResult, List[NodeStatus], Optional[JobOutcome]]:
    if spec.nodes is None:
        return launch(spec), [], None
    outcome = run_node(spec)
    return outcome.result, outcome.nodes, outcome


def _world(spec: LaunchSpec, nodes: List[NodeStatus]) -> int:
    if not nodes:
        return spec.nproc
    return max(sum(len(n.ranks) for n in nodes), spec.nproc * len(nodes))


def _fixed_copy_path(script: str) -> Tuple[str, Optional[str]]:
    """Where the fixed copy runs: a hidden sibling of the original (`.train.ddp-lint-fixed.py`, created here
    so that no other verify of the same script takes it), or, when the original's folder is not
    writable, a temporary folder (returned second, to be removed)."""
    folder, name = os.path.split(script)
    stem = os.path.splitext(name)[0]
    for candidate in (os.path.join(folder, f".{stem}.ddp-lint-fixed.py"),
                      # another verify of this script runs (here, or on another node of a shared filesystem)
                      os.path.join(folder, f".{stem}.ddp-lint-fixed-{socket.gethostname()}-{os.getpid()}.py")):
        try:
            os.close(os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            return candidate, None
        except FileExistsError:
            continue
        except OSError:
            break
    workdir = tempfile.mkdtemp(prefix="ddp-lint-verify-")
    return os.path.join(workdir, name), workdir


def _same_fixed_copy(records: Dict[int, List[Dict[str, Any]]], fixed_path: str) -> None:
    """Other nodes on a shared filesystem may have named their fixed copy differently: one path for all."""
    folder, name = os.path.split(fixed_path)
    stem = name[1:].split(".ddp-lint-fixed")[0]
    pattern = re.compile(re.escape(os.path.join(folder, f".{stem}.ddp-lint-fixed")) + r"[^/]*\.py$")

    def same(path: object) -> object:
        return fixed_path if isinstance(path, str) and pattern.match(path) else path

    for rows in records.values():
        for row in rows:
            if "path" in row:
                row["path"] = same(row["path"])
            for rel in row.get("related") or ():
                if isinstance(rel, dict) and "path" in rel:
                    rel["path"] = same(rel["path"])


# ---------------------------------------------------------------------------------- rendering
def _static_cell(side: Optional[Side]) -> str:
    if side is None:
        return "(not run)"
    return ", ".join(f"{f.code} line {f.line}" for f in side.static) or "none"


def _runtime_cell(side: Optional[Side]) -> str:
    if side is None:
        return "(not run)"
    return ", ".join(f"{f.code} line {f.line} ({f.severity})" for f in side.report.findings) or "none"


def _run_cell(side: Optional[Side]) -> str:
    if side is None:
        return "(not run)"
    report = side.report
    if report.timed_out:
        return f"timed out after {report.timeout:g}s"
    if report.failed:
        error = report.first_error()
        return f"exit {report.exit_code}" + (f": {error}" if error else "")
    return f"exit 0, {report.steps} step{'s' if report.steps != 1 else ''}"


def _checksum_cell(side: Optional[Side]) -> str:
    if side is None:
        return "(not run)"
    trace = side.report.traces.get(0) or next(iter(side.report.traces.values()), None)
    final = trace.final() if trace else None
    if final is None:
        return "-"
    status = model_status(side.report)
    note = " (unchanged)" if status == NEVER_CHANGED else ""
    return f"{float(final['sum']):.6f} #{str(final['hash'])[:8]}{note}"


def _losses(side: Optional[Side]) -> List[Optional[float]]:
    if side is None:
        return []
    trace = side.report.traces.get(0) or next(iter(side.report.traces.values()), None)
    return trace.losses() if trace else []


def _fmt_loss(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.6f}"


def render_text(result: VerifyResult) -> str:
    o, f = result.original, result.fixed
    rows: List[Tuple[str, str, str]] = [
        ("static findings", _static_cell(o), _static_cell(f)),
        ("runtime findings", _runtime_cell(o), _runtime_cell(f)),
        ("run", _run_cell(o), _run_cell(f)),
    ]
    lo, lf = _losses(o), _losses(f)
    for i in range(max(len(lo), len(lf))):
        # Counted from 0, as training scripts log their steps (`for step in range(n)`).
        rows.append((f"loss step {i}", _fmt_loss(lo[i]) if i < len(lo) else "-",
                     _fmt_loss(lf[i]) if i < len(lf) else "-"))
    rows.append(("param checksum", _checksum_cell(o), _checksum_cell(f)))
    width = max(len(r[1]) for r in rows)
    width = min(max(width, len("original")), 48)

    def cell(text: str) -> str:
        return text if len(text) <= width else text[: width - 3] + "..."

    fixes = f"{result.applied} fix{'es' if result.applied != 1 else ''} applied"
    processes = f"{o.report.nproc} process{'es' if o.report.nproc != 1 else ''}"
    lines = [f"ddp-lint verify {result.script} ({processes}, {fixes})", ""]
    lines.append(f"{'':18}  {'original':{width}}  fixed")
    for label, left, right in rows:
        lines.append(f"{label:18}  {cell(left):{width}}  {right}")
    lines.append("")
    for side in (o, f):
        if side is None or not side.report.findings:
            continue
        lines.append(f"{side.label} runtime findings:")
        for finding in side.report.findings:
            lines.append(f"  {finding.path}:{finding.line}: {finding.code} [{finding.severity}] {finding.message}")
            for rel in finding.related:
                lines.append(f"      {rel.path}:{rel.line}: {rel.note}")
            for text in finding.evidence:
                lines.append(f"      also: {text}")
    for side in (o, f):
        if side is not None and side.report.failed and side.report.output_tail:
            lines.append(f"{side.label}: last lines of output:")
            lines.extend(f"    | {line}" for line in side.report.output_tail[-8:])
    if result.diff:
        lines.append("fix:")
        lines.extend(f"    {line}" for line in result.diff)
    lines.append(f"verdict: {result.verdict}")
    return "\n".join(lines) + "\n"


def _side_json(side: Optional[Side]) -> Optional[Dict[str, object]]:
    if side is None:
        return None
    trace = side.report.traces.get(0) or next(iter(side.report.traces.values()), None)
    final = trace.final() if trace else None
    return {
        "static_findings": [s.to_json() for s in side.static],
        "run": report_json(side.report),
        "losses": _losses(side),
        "checksum": None if final is None else {"sum": final["sum"], "hash": final["hash"]},
        "final_hashes": {str(k): v for k, v in _final_hashes(side.report).items()},
        "model": model_status(side.report),
        "summary": describe(side.report),
        "clean": side.clean,
    }


def render_json(result: VerifyResult) -> str:
    return json.dumps({
        "script": result.script,
        "fixes_applied": result.applied,
        "original": _side_json(result.original),
        "fixed": _side_json(result.fixed),
        "verdict": result.verdict,
        "equivalent": result.equivalent,
        "steps": result.steps,
        "exit_code": result.exit_code,
    }, indent=2) + "\n"
