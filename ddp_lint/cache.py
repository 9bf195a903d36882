"""A content-hash cache of check results: JSON (never pickle: a repository could plant the file).

One entry per checked file, keyed by its absolute path: the file's digest (a size-and-mtime index
avoids rereading unchanged files), the fingerprint of the settings it was checked with, the digests
of the other project modules its result read, and when a run last saw it. A new result replaces the
file's entry (five edits leave one entry, not five), and a run drops the entries of files that no
longer exist and of files no run has seen for `STALE_DAYS`, so the store stays the size of the
trees checked. The fingerprint covers the tool's version and a digest of its own code (an editable
install or an upgrade from git changes the code, not the version), so a new analysis never serves
an old result.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from typing import Dict, List, Optional

from . import __version__
from .findings import Finding
from .pipeline import FileReport
from .settings import Settings

DEFAULT_DIR = ".ddp_lint_cache"
FILE_NAME = "v2.json"
STALE_DAYS = 30
_GITIGNORE = "# created by ddp-lint\n*\n"


def settings_fingerprint(settings: Settings, edits: bool = False) -> str:
    catalog = settings.catalog
    parts = [
        __version__,
        code_digest(),
        repr(edits),
        repr(settings.selection),
        _catalog_fingerprint(catalog),
        repr((settings.project, settings.src, settings.ignore_noqa)),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


_CATALOGS: Dict[int, tuple] = {}


def _catalog_fingerprint(catalog) -> str:
    known = _CATALOGS.get(id(catalog))
    if known is None or known[0] is not catalog:
        text = "\0".join([
            repr(sorted(catalog.holders.items())),
            repr(sorted((k, repr(v)) for k, v in catalog.call_placements.items())),
            repr(sorted(catalog.managed_qualified)),
        ])
        known = _CATALOGS[id(catalog)] = (catalog, hashlib.sha256(text.encode()).hexdigest())
    return known[1]


_DIGEST: List[str] = []


def code_digest() -> str:
    """A digest of the content of every module of the tool (about 0.5 MB, read once per process)."""
    if not _DIGEST:
        package = os.path.dirname(os.path.abspath(__file__))
        digest = hashlib.sha256()
        for folder, dirs, files in os.walk(package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    digest.update(os.path.relpath(path, package).encode() + b"\0")
                    with open(path, "rb") as handle:
                        digest.update(handle.read())
        _DIGEST.append(digest.hexdigest())
    return _DIGEST[0]


class Cache:
    def __init__(self, path: str) -> None:
        self.path = path
        self.files: Dict[str, dict] = {}
        self.digests: Dict[str, str] = {}  # this run: path -> content digest
        self.dirty = False
        self.now = int(time.time())

    @classmethod
    def open(cls, directory: Optional[str]) -> "Cache":
        cache = cls(os.path.join(directory or DEFAULT_DIR, FILE_NAME))
        try:
            with open(cache.path, encoding="utf-8") as handle:
                data = json.load(handle)
            if isinstance(data, dict) and isinstance(data.get("files"), dict):
                cache.files = data["files"]
        except (OSError, ValueError):
            pass  # a missing or damaged cache is an empty one
        return cache

    def _digest(self, path: str) -> Optional[str]:
        """The content digest; a file whose size and mtime match its entry is not read again (as ruff does)."""
        try:
            info = os.stat(path)
        except OSError:
            return None
        entry = self.files.get(os.path.abspath(path))
        if isinstance(entry, dict) and entry.get("mtime") == info.st_mtime_ns and entry.get("size") == info.st_size:
            digest = entry.get("digest")
        else:
            digest = _digest(path)
        if digest is not None:
            self.digests[path] = digest
        return digest

    def get(self, path: str, fingerprint: str) -> Optional[FileReport]:
        digest = self._digest(path)
        entry = self.files.get(os.path.abspath(path))
        if digest is None or not isinstance(entry, dict) or entry.get("digest") != digest:
            return None
        if entry.get("settings") != fingerprint:
            return None
        deps = entry.get("deps") or {}
        if not isinstance(deps, dict) or any(_digest(dep) != want for dep, want in deps.items()):
            return None  # a module it follows into changed: the finding may come or go
        try:
            report = FileReport(path, [Finding.from_dict(d) for d in entry["findings"]], error=entry.get("error"),
                                deps=deps)
        except (KeyError, TypeError, ValueError):
            return None
        seen = entry.get("seen")
        if not isinstance(seen, int) or self.now - seen > 86400:
            entry["seen"] = self.now  # a day's precision: a warm run that changed nothing writes nothing
            self.dirty = True
        return report

    def put(self, report: FileReport, fingerprint: str) -> None:
        digest = self.digests.get(report.path) or self._digest(report.path)
        if digest is None or (report.error and "permission" in report.error):
            return
        try:
            info = os.stat(report.path)
        except OSError:
            return
        self.files[os.path.abspath(report.path)] = {
            "mtime": info.st_mtime_ns, "size": info.st_size, "digest": digest, "settings": fingerprint,
            "findings": [f.to_dict() for f in report.findings], "error": report.error, "deps": report.deps,
            "seen": self.now,
        }
        self.dirty = True

    def prune(self) -> None:
        """Drop the entries of files that are gone, and of files no run has seen for STALE_DAYS."""
        oldest = self.now - STALE_DAYS * 86400
        for path in list(self.files):
            entry = self.files[path]
            seen = entry.get("seen") if isinstance(entry, dict) else None
            if not isinstance(seen, int) or seen < oldest or not os.path.exists(path):
                del self.files[path]
                self.dirty = True

    def flush(self) -> Optional[str]:
        """Write the cache if it changed; the reason when it cannot be written (said once per run by
        the caller, as ruff warns: the run is only slower next time)."""
        self.prune()
        if not self.dirty:
            return None
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, exist_ok=True)
            _ensure_gitignore(os.path.join(directory, ".gitignore"))
            fd, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump({"version": __version__, "files": self.files}, handle)
                os.replace(temporary, self.path)
            except BaseException:
                _remove(temporary)
                raise
        except OSError as exc:
            return f"cannot write the cache in {directory}: {(exc.strerror or str(exc)).lower()}"
        return None


def _ensure_gitignore(path: str) -> None:
    """Written whole or not at all: a full disk once left it empty, and an empty one was kept forever."""
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == _GITIGNORE:
                return
    except (OSError, ValueError):
        pass
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(_GITIGNORE)
        os.replace(temporary, path)
    except BaseException:
        _remove(temporary)
        raise


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _digest(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None
