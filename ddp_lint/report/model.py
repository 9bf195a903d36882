"""The result of a whole run, as every output format sees it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from ..findings import SAFE, UNSAFE, Finding, Mode


def applicable(finding: Finding, unsafe_fixes: bool) -> bool:
    """Whether `--fix` (with `--unsafe-fixes` or not, as given) fixes this finding."""
    return _fix_applicability(finding) in ((SAFE, UNSAFE) if unsafe_fixes else (SAFE,))


def _fix_applicability(finding: Finding) -> str:
    """SAFE or UNSAFE for a finding with an automatic fix, "" without one."""
    fix = finding.fix
    return fix.applicability if fix is not None and fix.available else ""


@dataclass
class RunResult:
    findings: List[Finding] = field(default_factory=list)  # what is still reported (after fixing, with --fix)
    errors: List[Tuple[str, str]] = field(default_factory=list)  # (path, one-line message)
    files: int = 0
    fixed: int = 0  # fixes applied (--fix) or that would be (--diff)
    fixed_files: List[str] = field(default_factory=list)
    fixed_by_file: Dict[str, Dict[str, int]] = field(default_factory=dict)  # `fixed`, by file and rule
    checked: List[str] = field(default_factory=list)  # every file checked, in order (junit's test cases)
    noqa_added: int = 0  # `--add-noqa`: the comments added or extended
    mode: Mode = Mode.CHECK
    unsafe_fixes: bool = False  # --unsafe-fixes was given: unsafe fixes count as applicable

    def fixable(self) -> int:
        """Reported findings that `--fix` (with this run's `--unsafe-fixes` choice) would fix."""
        return sum(1 for f in self.findings if applicable(f, self.unsafe_fixes))

    def hidden_unsafe_fixes(self) -> int:
        """Reported findings with an unsafe fix that only `--unsafe-fixes` would apply."""
        return 0 if self.unsafe_fixes else sum(1 for f in self.findings if _fix_applicability(f) == UNSAFE)

    def totals(self) -> Dict[str, object]:
        """The counts of the run (JSON output's `summary`)."""
        by_code: Dict[str, int] = {}
        for finding in self.findings:
            by_code[finding.code] = by_code.get(finding.code, 0) + 1
        return {
            "mode": self.mode,
            "files": self.files,
            "findings": len(self.findings),
            "errors": len(self.errors),
            "fixed": self.fixed,
            "remaining": len(self.findings),
            "fixable": self.fixable(),
            "hidden_unsafe_fixes": self.hidden_unsafe_fixes(),
            "by_code": dict(sorted(by_code.items())),
        }
