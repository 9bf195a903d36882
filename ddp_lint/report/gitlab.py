"""`--output-format gitlab`: a GitLab Code Quality report (a JSON list of Code Climate issues), which
merge requests show as new and resolved findings.

Each issue has the fields GitLab requires (description, check_name, fingerprint, severity,
location.path, location.lines.begin). GitLab matches findings across commits by `fingerprint`, so it
is built from what stays when code moves: the rule, the path (relative to the working folder, as
the report's paths must be) and the summary with its line numbers taken out; identical ones in a
file are told apart by their order. A file that could not be checked is an issue too."""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Dict, List

from ..paths import relative_path
from .model import RunResult

_SEVERITY = {"error": "critical", "warning": "major", "info": "info"}
_LINE_NUMBER = re.compile(r"\bline \d+(?: of cell \d+)?")


def _fingerprint(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:32]


def render(result: RunResult) -> str:
    issues: List[Dict[str, Any]] = []
    seen: Dict[tuple, int] = {}

    def unique(*parts: str) -> str:
        occurrence = seen[parts] = seen.get(parts, -1) + 1
        return _fingerprint(*parts, str(occurrence))

    for f in result.findings:
        path = relative_path(f.path)
        text = f.summary or f.message
        where = f"cell {f.cell}, line {f.line}: " if f.cell is not None else ""
        # a notebook's lines are a cell's; the report can only point at the file's first line
        lines = {"begin": 1, "end": 1} if f.cell is not None else {"begin": f.line, "end": max(f.end_line, f.line)}
        issues.append({
            "type": "issue",
            "check_name": f.code,
            "description": f"{f.code} {where}{text}",
            "content": {"body": f.message},
            "categories": ["Bug Risk"],
            "fingerprint": unique(f.code, path, _LINE_NUMBER.sub("line N", text)),
            "severity": _SEVERITY[f.severity],
            "location": {"path": path, "lines": lines},
        })
    for error_path, message in result.errors:
        path = relative_path(error_path)
        issues.append({
            "type": "issue",
            "check_name": "ddp-lint-error",
            "description": message,
            "categories": ["Bug Risk"],
            "fingerprint": unique("error", path, message),
            "severity": "critical",
            "location": {"path": path, "lines": {"begin": 1, "end": 1}},
        })
    return json.dumps(issues, indent=2)
