"""Writes a fixed file atomically: same folder, same mode, encoding, BOM and line endings, or not at all."""
from __future__ import annotations

import os
import stat
import tempfile

from ..source import InputError, SourceText


def encode(text: str, original: SourceText) -> bytes:
    data = text.encode(original.encoding)
    return b"\xef\xbb\xbf" + data if original.bom else data


def write_atomic(path: str, text: str, original: SourceText) -> None:
    """Replace `path` by `text` through a temporary file and a rename; the original survives any failure."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}") from None
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise InputError("file is read-only; not fixed")
    try:
        data = encode(text, original)
    except UnicodeEncodeError as exc:
        raise InputError(f"fixed text cannot be encoded as {original.encoding}: {exc.reason}") from None
    directory = os.path.dirname(os.path.abspath(path))
    real = os.path.realpath(path)  # a symlink stays a symlink: write through to its target
    try:
        fd, temporary = tempfile.mkstemp(prefix=".ddp-lint-", suffix=".tmp", dir=os.path.dirname(real) or directory)
    except OSError as exc:
        raise InputError(f"cannot write next to the file: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, stat.S_IMODE(info.st_mode))
        os.replace(temporary, real)
    except OSError as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise InputError(f"write failed: {exc.strerror}; file left unchanged") from None
