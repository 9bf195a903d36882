"""Writes a fixed file: same encoding, BOM, line endings, mode and (where permitted) owner, or not at all.

A file is replaced through a temporary file and a rename, so a failure leaves the original. A file with
hard links is rewritten in place instead, so that every name sees the fix. Either way the file is left
alone if its bytes are no longer the ones that were read: someone else's edit is never overwritten.
"""
from __future__ import annotations

import os
import stat
import tempfile

from ..documents.python import InputError, SourceText, encode

CHANGED = "file changed on disk while it was being fixed; not fixed"


def write_atomic(path: str, text: str, original: SourceText) -> None:
    """Replace the content of `path` by `text`; raise InputError (one line) and leave the file as it was if not."""
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
    real = os.path.realpath(path)  # a symlink stays a symlink: write through to its target
    if info.st_nlink > 1:
        _write_in_place(real, data, original.raw)  # a rename would give this name a new inode and split the links
        return
    try:
        fd, temporary = tempfile.mkstemp(prefix=".ddp-lint-", suffix=".tmp", dir=os.path.dirname(real))
    except OSError as exc:
        raise InputError(f"cannot write next to the file: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.chown(temporary, info.st_uid, info.st_gid)
        except OSError:
            pass  # only root may give a file away: a file fixed by its owner keeps its owner anyway
        os.chmod(temporary, stat.S_IMODE(info.st_mode))  # after chown, which clears set-user/group-ID bits
        # Compare as late as possible. An edit landing between this read and the rename is still lost:
        # there is no portable compare-and-rename, and the window is a read's length, not the fix's.
        if _current(real) != original.raw:
            raise InputError(CHANGED)
        os.replace(temporary, real)
    except BaseException as exc:  # Ctrl-C included: never leave a temporary file behind
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise InputError(f"write failed: {exc.strerror}; file left unchanged") from None
        raise


def _current(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _overwrite(handle, data: bytes) -> None:
    handle.seek(0)
    handle.write(data)
    handle.truncate()
    handle.flush()
    os.fsync(handle.fileno())


def _write_in_place(path: str, data: bytes, raw: bytes) -> None:
    """Rewrite the inode itself; on failure, put the bytes that were read back."""
    try:
        handle = open(path, "r+b")
    except OSError as exc:
        raise InputError(f"write failed: {exc.strerror}; file left unchanged") from None
    with handle:
        try:
            current = handle.read()
        except OSError as exc:
            raise InputError(f"write failed: {exc.strerror}; file left unchanged") from None
        if current != raw:
            raise InputError(CHANGED)
        try:
            _overwrite(handle, data)
        except BaseException as exc:
            # The restore rewrites blocks the original already occupied, so it normally succeeds even on a
            # full disk. It cannot help against a crash, a power cut or SIGKILL mid-write, or a
            # copy-on-write file system that needs new blocks: then the file may be left partly written.
            try:
                _overwrite(handle, raw)
            except OSError:
                # Said even on Ctrl-C: that the file may be damaged matters more than how the run ended.
                raise InputError("write failed and the original could not be put back; file may be damaged") from None
            if isinstance(exc, OSError):
                raise InputError(f"write failed: {exc.strerror}; file left unchanged") from None
            raise
