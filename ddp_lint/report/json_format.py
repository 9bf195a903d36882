"""`--output-format json`: one object with findings, errors and a summary."""
from __future__ import annotations

import json
from typing import Any, Dict

from ..findings import Finding
from .model import RunResult


def finding_to_dict(finding: Finding) -> Dict[str, Any]:
    return finding.to_dict()


def render(result: RunResult) -> str:
    document = {
        "findings": [finding_to_dict(f) for f in result.findings],
        "errors": [{"path": path, "message": message} for path, message in result.errors],
        "summary": result.totals(),
    }
    return json.dumps(document, indent=2)
