"""Find the user's source line behind a call that reached a monitored torch API."""
from __future__ import annotations

import functools
import os
import sys
import sysconfig
from dataclasses import dataclass
from types import FrameType
from typing import Dict, Optional

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Site:
    path: str
    line: int
    function: str = ""

    def to_json(self) -> Dict[str, object]:
        return {"path": self.path, "line": self.line, "function": self.function}

    @classmethod
    def from_json(cls, data: Dict[str, object]) -> "Site":
        return cls(str(data["path"]), int(data["line"]), str(data.get("function", "")))


@functools.lru_cache(maxsize=None)
def _internal_roots() -> tuple:
    roots = {_RUNTIME_DIR}
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.realpath(path))
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        roots.add(os.path.dirname(os.path.realpath(torch.__file__)))
    return tuple(sorted(roots))


@functools.lru_cache(maxsize=4096)
def is_internal(filename: str) -> bool:
    """True for frames of torch, the standard library and this package: never the user's line."""
    if filename.startswith("<"):
        return True
    real = os.path.realpath(filename)
    return any(real == root or real.startswith(root + os.sep) for root in _internal_roots())


def user_frame(skip: int = 1) -> Optional[FrameType]:
    """The innermost frame outside torch, the stdlib and ddp_lint.runtime, `skip` frames up."""
    frame: Optional[FrameType] = sys._getframe(skip)
    while frame is not None:
        if not is_internal(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
    return None


def site_of(frame: Optional[FrameType]) -> Optional[Site]:
    if frame is None:
        return None
    return Site(os.path.abspath(frame.f_code.co_filename), frame.f_lineno, frame.f_code.co_name)


def user_site(skip: int = 1) -> Optional[Site]:
    return site_of(user_frame(skip + 1))


def caller_name(skip: int = 1) -> str:
    """Name of the function `skip` frames up: which `Module` method (`to`, `double`, ...) ran."""
    try:
        return sys._getframe(skip + 1).f_code.co_name
    except ValueError:
        return ""
