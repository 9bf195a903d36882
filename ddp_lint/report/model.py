"""The result of a whole run, as every output format sees it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from ..findings import Finding


@dataclass
class RunResult:
    findings: List[Finding] = field(default_factory=list)
    errors: List[Tuple[str, str]] = field(default_factory=list)  # (path, one-line message)
    files: int = 0
    fixed: int = 0
    fixed_files: List[str] = field(default_factory=list)

    def summary(self) -> Dict[str, object]:
        by_code: Dict[str, int] = {}
        for finding in self.findings:
            by_code[finding.code] = by_code.get(finding.code, 0) + 1
        return {
            "files": self.files,
            "findings": len(self.findings),
            "errors": len(self.errors),
            "fixed": self.fixed,
            "by_code": dict(sorted(by_code.items())),
        }
