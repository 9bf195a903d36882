"""`--output-format junit`: JUnit XML, which CI systems (GitLab, Jenkins, Azure, CircleCI) show as
test results: one test suite `ddp-lint`, one test case per file checked (a clean file passes), a
`<failure>` per finding in it and an `<error>` for a file that could not be checked. The counts on
the suite are those a JUnit reader computes (tests: files; failures and errors: elements)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Dict, List, Tuple

from ..findings import Finding
from .model import RunResult

NAME = "ddp-lint"


def _location(f: Finding) -> str:
    return f"{f.path}:cell {f.cell}:{f.line}:{f.column}" if f.cell is not None else f"{f.path}:{f.line}:{f.column}"


def render(result: RunResult) -> str:
    findings: Dict[str, List[Finding]] = {}
    for f in result.findings:
        findings.setdefault(f.path, []).append(f)
    errors: Dict[str, List[str]] = {}
    for path, message in result.errors:
        errors.setdefault(path, []).append(message)
    # every file checked, then any other path an error or finding names (a folder that could not be read)
    paths = list(dict.fromkeys([*result.checked, *sorted(findings), *sorted(errors)]))
    failures, error_count = len(result.findings), len(result.errors)
    counts: List[Tuple[str, str]] = [("tests", str(len(paths))), ("failures", str(failures)),
                                     ("errors", str(error_count)), ("skipped", "0")]
    root = ET.Element("testsuites", dict([("name", NAME), *counts[:3]]))
    suite = ET.SubElement(root, "testsuite", dict([("name", NAME), *counts]))
    for path in paths:
        case = ET.SubElement(suite, "testcase", {"classname": NAME, "name": path, "file": path})
        for f in findings.get(path, ()):
            failure = ET.SubElement(case, "failure", {"type": f.code, "message": f"{f.code} {f.summary or f.message}"})
            body = [f"{_location(f)}: {f.code} {f.summary or f.message}"]
            if f.summary:
                body.append(f.message)
            body.extend(f"{r.role}: {r.path}:{r.line}:{r.column}: {r.message}" for r in f.related)
            failure.text = "\n".join(body)
        for message in errors.get(path, ()):
            ET.SubElement(case, "error", {"type": "error", "message": message}).text = message
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")
