"""What a finding is once it leaves the pipeline: plain data that every front end, output format and
the results cache read, that crosses process boundaries as it is, and that `to_dict`/`from_dict`
turn into JSON and back (one encoder, one decoder). Positions and line references in the text are
already rendered for the document (a notebook's `cell`); nothing here refers to a parse tree."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Set, Tuple, TypeVar

T = TypeVar("T")


class Mode(str, Enum):
    """What a run does with what it finds (a `str`, so JSON and the cache carry it as its value)."""

    CHECK = "check"
    FIX = "fix"  # `--fix`: written
    DIFF = "diff"  # `--diff`: shown, not written
    ADD_NOQA = "add-noqa"  # `--add-noqa`: a `# noqa` comment for each finding left


SAFE, UNSAFE = "safe", "unsafe"


@dataclass(frozen=True)
class Edit:
    """A fix as a replacement of the lines it changes: `line`..`end_line` (1-based, inclusive) become
    `content`; `end_column` is one past the last character of `end_line`."""

    line: int
    end_line: int
    end_column: int
    content: str

    def to_dict(self) -> Dict[str, Any]:
        return {"line": self.line, "end_line": self.end_line, "end_column": self.end_column, "content": self.content}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Edit":
        return cls(data["line"], data["end_line"], data["end_column"], data["content"])


@dataclass(frozen=True)
class Fix:
    """A finding's automatic fix, or why there is none (`available` false, `reason` says why)."""

    available: bool
    applicability: str = ""  # SAFE or UNSAFE when available
    message: str = ""  # what the fix does
    reason: str = ""  # why it is unsafe, or why there is no fix
    edit: Optional[Edit] = None  # only when an output asked for it (JSON, SARIF, the language server)

    def to_dict(self) -> Dict[str, Any]:
        if not self.available:
            return {"available": False, "reason": self.reason}
        data: Dict[str, Any] = {"available": True, "applicability": self.applicability, "message": self.message}
        if self.reason:
            data["reason"] = self.reason
        if self.edit is not None:
            data["edit"] = self.edit.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Fix":
        edit = data.get("edit")
        return cls(bool(data["available"]), data.get("applicability", ""), data.get("message", ""),
                   data.get("reason", ""), Edit.from_dict(edit) if edit else None)


@dataclass
class Related:
    path: str
    line: int
    column: int
    role: str
    message: str
    cell: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {"path": self.path, "line": self.line, "column": self.column, "role": self.role,
                                "message": self.message}
        if self.cell is not None:
            data["cell"] = self.cell
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Related":
        return cls(data["path"], data["line"], data["column"], data["role"], data["message"], data.get("cell"))


@dataclass
class Reported:
    """What a diagnostic (program lines, engine.py) and a finding (the document's lines) both say: the
    rule, and the range of the reported statement."""

    path: str
    line: int  # 1-based, first line of the reported statement
    column: int  # 1-based
    end_line: int
    end_column: int
    code: str
    name: str
    severity: str


@dataclass
class Finding(Reported):
    message: str  # the explanation (what goes wrong, what to do, why no fix)
    related: List[Related] = field(default_factory=list)
    fix: Optional[Fix] = None
    cell: Optional[int] = None  # notebooks: 1-based cell position, markdown cells counted
    summary: str = ""  # the concise line: what, and the line of the placement
    # A report of a pair the other side reports too (the function or object a caller calls; the caller
    # that placed a class's object): that side's module, as paths are shown. A run that checks that
    # module drops this report.
    deferred_to: List[str] = field(default_factory=list)
    # and where that module makes the placement (path as shown, line): the report stands only where a
    # check of that module reports a placement there too (see `shown_in_run`)
    deferred_at: List[Tuple[str, int]] = field(default_factory=list)

    def sort_key(self):
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    def to_dict(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "summary": self.summary,
            "message": self.message,
            "related": [r.to_dict() for r in self.related],
            "fix": self.fix.to_dict() if self.fix is not None else None,
        }
        if self.cell is not None:
            data["cell"] = self.cell
        if self.deferred_to:
            data["deferred_to"] = list(self.deferred_to)
            data["deferred_at"] = [list(at) for at in self.deferred_at]
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Finding":
        return cls(
            data["path"], data["line"], data["column"], data["end_line"], data["end_column"], data["code"],
            data["name"], data["severity"], data["message"], [Related.from_dict(r) for r in data["related"]],
            Fix.from_dict(data["fix"]) if data["fix"] is not None else None, data.get("cell"), data.get("summary", ""),
            list(data.get("deferred_to", ())), [tuple(at) for at in data.get("deferred_at", ())],
        )


def shown_in_run(findings: List[T], checked: Optional[Set[str]],
                 reported: Optional[Callable[[str], FrozenSet[Tuple[str, int]]]] = None) -> List[T]:
    """One report per bug in a run: a report of a pair the other side reports too (a caller's, of what
    the function or object it calls reports; a class's, of what its caller reports) is dropped when the
    run checks that side's module too (`checked`: the run's files, absolute), and always when the run's
    files are unknown (`None`: an editor's buffer, flake8's one file at a time), where that side's is
    the one report. Otherwise it stands only where a check
    of that module reports the same placement (`reported(module)`: the (absolute path, line) of every
    placement it reports; engine.placements_reported), asked only of the few reports left here."""
    def shown(finding: T) -> bool:
        if not finding.deferred_to:
            return True
        if checked is None or any(os.path.abspath(path) in checked for path in finding.deferred_to):
            return False
        at = {(os.path.abspath(path), line) for path, line in finding.deferred_at}
        return bool(at) and reported is not None and any(at & reported(module) for module in finding.deferred_to)

    return [f for f in findings if shown(f)]
