"""What a finding is, as every front end and output format sees it (no parser needed to read one)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional


@dataclass
class Related:
    path: str
    line: int
    column: int
    role: str
    message: str
    cell: Optional[int] = None


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
    message: str
    related: List[Related] = field(default_factory=list)
    fix: Optional[dict] = None
    hit: Optional[object] = field(default=None, repr=False, compare=False)
    plan: Optional[object] = field(default=None, repr=False, compare=False)  # FixPlan or Refusal
    cell: Optional[int] = None  # notebooks: 1-based cell position, markdown cells counted

    def sort_key(self):
        return (self.path, self.line, self.column, self.code)


