"""What a finding is once it leaves the pipeline: plain data that every front end, output format and
the results cache read, that crosses process boundaries as it is, and that `to_dict`/`from_dict`
turn into JSON and back (one encoder, one decoder). Positions and line references in the text are
already rendered for the document (a notebook's `cell`); nothing here refers to a parse tree."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


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
class Finding:
    path: str
    line: int  # 1-based, first line of the reported statement
    column: int  # 1-based
    end_line: int
    end_column: int
    code: str
    name: str
    severity: str
    message: str  # the explanation (what goes wrong, what to do, why no fix)
    related: List[Related] = field(default_factory=list)
    fix: Optional[dict] = None  # available, applicability, message, reason; `edit` when asked for
    cell: Optional[int] = None  # notebooks: 1-based cell position, markdown cells counted
    summary: str = ""  # the concise line: what, and the line of the placement

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
            "fix": self.fix,
        }
        if self.cell is not None:
            data["cell"] = self.cell
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Finding":
        return cls(
            data["path"], data["line"], data["column"], data["end_line"], data["end_column"], data["code"],
            data["name"], data["severity"], data["message"], [Related.from_dict(r) for r in data["related"]],
            data["fix"], data.get("cell"), data.get("summary", ""),
        )
