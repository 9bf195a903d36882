"""Runtime findings: the rule codes they name, their JSON form, and deduplication across ranks and steps."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

from ..rules.table import ERROR, INFO, RULE_TABLE, WARNING

# The static rules' codes and names (ddp_lint/rules/table.py); the runtime reports under the same code
# so a reader can match a proof to the static finding. DDP000 is runtime-only: ranks that disagree
# with no recorded cause have no static counterpart.
RULES: Dict[str, Tuple[str, str]] = {
    "DDP000": ("replicated-params-diverged", ERROR),
    **{code: (info.name, info.severity) for code, info in RULE_TABLE.items()},
}

_SEVERITY_RANK = {ERROR: 0, WARNING: 1, INFO: 2}


def rule_name(code: str) -> str:
    return RULES.get(code, ("runtime", ERROR))[0]


@dataclass
class RuntimeRelated:
    path: str
    line: int
    note: str

    def to_json(self) -> Dict[str, object]:
        return {"path": self.path, "line": self.line, "note": self.note}


@dataclass
class RuntimeFinding:
    code: str
    severity: str
    message: str
    path: str
    line: int
    related: List[RuntimeRelated] = field(default_factory=list)
    ranks: List[int] = field(default_factory=list)
    step: Optional[int] = None
    # A few words for verdicts ("optimizer stepped stale parameters"); the message explains.
    outcome: str = ""
    # Messages of other checks that fired for the same code and line (kept after merging).
    evidence: List[str] = field(default_factory=list)
    # How many of the holder's parameters the finding is about, where it grows as the script goes on
    # (parameters replaced call after call): of findings at the same moment, the widest is kept and
    # the narrower ones it includes are dropped. 0: not counted.
    covers: int = 0

    @property
    def key(self) -> Tuple[str, str, int]:
        return (self.code, self.path, self.line)

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def to_json(self) -> Dict[str, object]:
        return {
            "code": self.code,
            "name": rule_name(self.code),
            "severity": self.severity,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "related": [r.to_json() for r in self.related],
            "ranks": list(self.ranks),
            "step": self.step,
            "outcome": self.outcome,
            "evidence": list(self.evidence),
            **({"covers": self.covers} if self.covers else {}),
        }

    @classmethod
    def from_json(cls, data: Dict[str, object]) -> "RuntimeFinding":
        return cls(
            code=str(data["code"]),
            severity=str(data["severity"]),
            message=str(data["message"]),
            path=str(data["path"]),
            line=int(data["line"]),  # type: ignore[arg-type]
            related=[RuntimeRelated(str(r["path"]), int(r["line"]), str(r.get("note", "")))
                     for r in data.get("related", [])],  # type: ignore[union-attr]
            ranks=[int(r) for r in data.get("ranks", [])],  # type: ignore[union-attr]
            step=None if data.get("step") is None else int(data["step"]),  # type: ignore[arg-type]
            outcome=str(data.get("outcome", "")),
            evidence=[str(e) for e in data.get("evidence", [])],  # type: ignore[union-attr]
            covers=int(data.get("covers", 0) or 0),  # type: ignore[call-overload]
        )


def _step_order(finding: RuntimeFinding) -> Tuple[int, int]:
    # Findings raised outside any step (at a conversion, say) come first: they explain later ones.
    return (0 if finding.step is None else 1, finding.step or 0)


def merge_findings(findings: Iterable[RuntimeFinding]) -> List[RuntimeFinding]:
    """One finding per (code, path, line): ranks unioned, earliest step and its message kept."""
    groups: Dict[Tuple[str, str, int], List[RuntimeFinding]] = {}
    for finding in findings:
        groups.setdefault(finding.key, []).append(finding)
    merged: List[RuntimeFinding] = []
    for group in groups.values():
        group.sort(key=lambda f: (_step_order(f), -f.covers, min(f.ranks) if f.ranks else 0))
        first = group[0]
        ranks = sorted({r for f in group for r in f.ranks})
        # A narrower count of the same thing at the same moment is part of the widest, not evidence.
        group = [f for f in group if f is first or not (f.covers and f.outcome == first.outcome
                                                         and f.step == first.step and f.covers < first.covers)]
        related: List[RuntimeRelated] = []
        seen_related = set()
        evidence: List[str] = []
        for f in group:
            for rel in f.related:
                if (rel.path, rel.line) not in seen_related:
                    seen_related.add((rel.path, rel.line))
                    related.append(rel)
            for text in [f.message, *f.evidence]:
                if text != first.message and text not in evidence:
                    evidence.append(text)
        severity = min((f.severity for f in group), key=lambda s: _SEVERITY_RANK.get(s, 3))
        steps = [f.step for f in group if f.step is not None]
        merged.append(
            RuntimeFinding(
                code=first.code,
                severity=severity,
                message=first.message,
                path=first.path,
                line=first.line,
                related=related,
                ranks=ranks,
                step=min(steps) if steps else None,
                outcome=next((f.outcome for f in group if f.outcome), ""),
                evidence=evidence,
                covers=first.covers,
            )
        )
    merged.sort(key=lambda f: (f.path, f.line, f.code))
    return merged


def has_error(findings: Iterable[RuntimeFinding]) -> bool:
    return any(f.is_error for f in findings)
