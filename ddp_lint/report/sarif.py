"""`--output-format sarif`: SARIF 2.1.0 with rule docs, related locations and fixes where available."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List

from .. import __version__
from ..rules import all_rules
from .model import RunResult

_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str) -> str:
    return path.replace(os.sep, "/")


def _region(line: int, column: int, end_line: int = 0, end_column: int = 0) -> Dict[str, int]:
    region = {"startLine": line, "startColumn": column}
    if end_line:
        region.update(endLine=end_line, endColumn=end_column)
    return region


def _location(path: str, cell, region: Dict[str, int]) -> Dict[str, Any]:
    """A file region; for a notebook the line is a line of a cell, so the cell and line go in properties."""
    if cell is None:
        return {"physicalLocation": {"artifactLocation": {"uri": _uri(path)}, "region": region}}
    return {
        "physicalLocation": {"artifactLocation": {"uri": _uri(path)}},
        "properties": {"cell": cell, "line": region["startLine"], "column": region["startColumn"]},
    }


def render(result: RunResult) -> str:
    rules = all_rules()
    index = {rule.code: i for i, rule in enumerate(rules)}
    results: List[Dict[str, Any]] = []
    for f in result.findings:
        entry: Dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _LEVEL[f.severity],
            "message": {"text": f"{f.summary}. {f.message}" if f.summary else f.message},
            "locations": [_location(f.path, f.cell, _region(f.line, f.column, f.end_line, f.end_column))],
        }
        if f.related:
            entry["relatedLocations"] = [
                {"id": i, "message": {"text": f"{r.role}: {r.message}"}, **_location(r.path, r.cell, _region(r.line, r.column))}
                for i, r in enumerate(f.related)
            ]
        if f.fix is not None and f.fix.available and f.fix.edit is not None:
            edit = f.fix.edit
            entry["fixes"] = [
                {
                    "description": {"text": f.fix.message + (f" (unsafe: {f.fix.reason})" if f.fix.reason else "")},
                    "properties": {"applicability": f.fix.applicability},
                    "artifactChanges": [
                        {
                            "artifactLocation": {"uri": _uri(f.path)},
                            "replacements": [
                                {
                                    "deletedRegion": {"startLine": edit.line, "endLine": edit.end_line},
                                    "insertedContent": {"text": edit.content[:-1] if edit.content.endswith("\n") else edit.content},
                                }
                            ],
                        }
                    ],
                }
            ]
        results.append(entry)
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "ddp-lint",
                        "version": __version__,
                        "informationUri": "https://pypi.org/project/ddp-lint/",
                        "rules": [
                            {
                                "id": rule.code,
                                "name": rule.name,
                                "shortDescription": {"text": rule.name.replace("-", " ")},
                                "fullDescription": {"text": (rule.__doc__ or "").split("## Why is this bad?")[0].split("## What it does")[-1].strip()},
                                "help": {"text": rule.__doc__ or "", "markdown": rule.__doc__ or ""},
                                "defaultConfiguration": {"level": _LEVEL[rule.severity]},
                            }
                            for rule in rules
                        ],
                    }
                },
                "results": results,
                "invocations": [
                    {
                        "executionSuccessful": not result.errors,
                        "toolExecutionNotifications": [
                            {"level": "error", "message": {"text": message}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(path)}}}]}
                            for path, message in result.errors
                        ],
                    }
                ],
            }
        ],
    }
    return json.dumps(document, indent=2)
