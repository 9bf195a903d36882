"""`--output-format json`: one object with findings, errors and a summary."""
from __future__ import annotations

import json
from typing import Any, Dict

from ..findings import Finding
from .model import RunResult


def finding_to_dict(finding: Finding) -> Dict[str, Any]:
    data: Dict[str, Any] = {
        "path": finding.path,
        "line": finding.line,
        "column": finding.column,
        "end_line": finding.end_line,
        "end_column": finding.end_column,
        "code": finding.code,
        "name": finding.name,
        "severity": finding.severity,
        "message": finding.message,
        "related": [
            {"path": r.path, "line": r.line, "column": r.column, "role": r.role, "message": r.message, **({"cell": r.cell} if getattr(r, "cell", None) else {})}
            for r in finding.related
        ],
        "fix": finding.fix,
    }
    if finding.cell is not None:
        data["cell"] = finding.cell
    return data


def render(result: RunResult) -> str:
    document = {
        "findings": [finding_to_dict(f) for f in result.findings],
        "errors": [{"path": path, "message": message} for path, message in result.errors],
        "summary": result.summary(),
    }
    return json.dumps(document, indent=2)
