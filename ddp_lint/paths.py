"""Paths as tools outside ddp-lint read them: relative to the working folder, with `/` separators."""
from __future__ import annotations

import os


def relative_path(path: str) -> str:
    """`path` relative to the working folder and without `.` or `..` parts when the file is inside
    it (GitLab and `git apply` want `train.py`, never `./train.py`); else absolute."""
    absolute = os.path.abspath(path)
    here = os.getcwd()
    if absolute.startswith(here.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, here).replace(os.sep, "/")
    return absolute.replace(os.sep, "/")


def diff_path(path: str) -> str:
    """The path a diff header names, as `git apply` accepts it (it refuses `a/./train.py`): relative
    to the working folder when the file is inside it, else absolute without its leading slash
    (`a/tmp/x.py`, applied from the root)."""
    absolute = os.path.abspath(path)
    relative = relative_path(path)
    return absolute.lstrip(os.sep).replace(os.sep, "/") if relative == absolute.replace(os.sep, "/") else relative
