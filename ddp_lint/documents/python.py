"""A Python source file as a document: decoded the way the interpreter would (BOM, coding cookie),
encoded back the same way, with one-line errors. The program the engine reads is the text itself."""
from __future__ import annotations

import io
import os
import stat
import tokenize
from dataclasses import dataclass
from typing import Optional, Tuple


class InputError(Exception):
    """A file that cannot be checked; the message is one line meant for the user (it may name a line
    of the program with `lines.line_ref`, which the document renders). A syntax error also carries
    its program line and column and the parser's words (`detail`), for an editor to mark the spot."""

    def __init__(self, message: str, line: Optional[int] = None, column: Optional[int] = None,
                 detail: Optional[str] = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.detail = detail


@dataclass(frozen=True)
class SourceText:
    text: str  # decoded, BOM removed, newlines as in the file
    encoding: str  # as declared (cookie) or utf-8
    bom: bool
    raw: bytes


# Codecs that a package registers to rewrite the source as Python reads it, over UTF-8 text:
# future-fstrings (`# -*- coding: future_fstrings -*-`) backports f-strings to Pythons that lack them,
# and on 3.6+ its decoding is the text as it is. Such a file is UTF-8 code with that cookie in it.
_UTF8_SOURCE_TRANSFORMS = frozenset({"future_fstrings", "future-fstrings"})


def decode(raw: bytes) -> SourceText:
    if b"\x00" in raw[:8192]:
        raise InputError("binary file (NUL bytes), not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        reason = str(exc.msg if getattr(exc, "msg", None) else exc)
        if reason.rpartition(": ")[2] in _UTF8_SOURCE_TRANSFORMS:
            encoding = "utf-8"
        elif "invalid or missing encoding declaration" not in reason:
            raise InputError(f"bad encoding declaration: {reason}") from None
        else:
            encoding = "utf-8"  # no cookie and bytes that are not UTF-8: say so below
    bom = raw.startswith(b"\xef\xbb\xbf")
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    body = raw[3:] if bom else raw
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid {codec} text (byte {exc.start}: {body[exc.start:exc.start + 1]!r})") from None
    except LookupError:
        raise InputError(f"unknown encoding {encoding!r} in the coding declaration") from None
    return SourceText(text, codec, bom, raw)


def not_regular(mode: int) -> Optional[str]:
    """What a file that is not a regular file is: reading a named pipe or a device may block forever
    or never end, so such a file is never read."""
    for test, what in ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "not a file"


def read_source(path: str) -> SourceText:
    try:
        what = not_regular(os.stat(path).st_mode)
        if what is not None:
            raise InputError(f"not a regular file ({what}); ddp-lint reads only files")
        with open(path, "rb") as handle:
            raw = handle.read()
    except IsADirectoryError:
        raise InputError("is a directory") from None
    except PermissionError:
        raise InputError("permission denied") from None
    except OSError as exc:
        raise InputError(exc.strerror or str(exc)) from None
    return decode(raw)


def encode(text: str, original: SourceText) -> bytes:
    data = text.encode(original.encoding)
    return b"\xef\xbb\xbf" + data if original.bom else data


class PythonDocument:
    """A `.py` file (or stdin): the program is the file's text, positions are its own lines."""

    def __init__(self, path: str, source: SourceText) -> None:
        self.path = path
        self.source = source
        self.program: Optional[str] = source.text

    def place(self, line: int) -> Tuple[Optional[int], int]:
        """(cell, line) a reader sees for a line of the program: no cells here."""
        return None, line

    def writable(self, line: int) -> bool:
        """Whether text added at the end of a program line lands in the file: every line does here."""
        return True

    def rebuild(self, program: str) -> str:
        """The file's new text for a fixed program."""
        return program
