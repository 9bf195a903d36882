"""A content-hash cache of check results: JSON (never pickle: a repository could plant the file).

Entries are keyed by the file's path and bytes (a size-and-mtime index avoids rereading unchanged
files); the whole cache file is keyed by the tool version, the tool's own sources (an editable
install or a checkout changes them without a new version) and the settings, so changing any of them
starts a fresh cache.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Dict, Optional

from . import __version__
from .findings import Finding, Related
from .report.json_format import finding_to_dict
from .runner import FileReport
from .settings import Settings

DEFAULT_DIR = ".ddp_lint_cache"


def settings_fingerprint(settings: Settings) -> str:
    catalog = settings.catalog
    parts = [
        __version__,
        _code_stamp(),
        repr(settings.selection),
        repr(sorted(settings.per_file_ignores.items())),
        repr(sorted(catalog.holders.items())),
        repr(sorted((k, repr(v)) for k, v in catalog.call_placements.items())),
        repr(sorted(catalog.managed_qualified)),
        repr((settings.project, settings.src)),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


_STAMP: list = []


def _code_stamp() -> str:
    """Size and modification time of every module of the tool: a stat per file, no reads."""
    if not _STAMP:
        package = os.path.dirname(os.path.abspath(__file__))
        parts = []
        for folder, dirs, files in os.walk(package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    stat = os.stat(os.path.join(folder, name))
                    parts.append(f"{os.path.relpath(os.path.join(folder, name), package)}:{stat.st_size}:{stat.st_mtime_ns}")
        _STAMP.append(hashlib.sha256("\n".join(parts).encode()).hexdigest())
    return _STAMP[0]


class Cache:
    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: Dict[str, dict] = {}
        self.stats: Dict[str, list] = {}  # absolute path -> [mtime_ns, size, content key]
        self.hashes: Dict[str, str] = {}
        self.dirty = False

    @classmethod
    def open(cls, directory: Optional[str], settings: Settings) -> "Cache":
        directory = directory or DEFAULT_DIR
        cache = cls(os.path.join(directory, f"v1-{settings_fingerprint(settings)}.json"))
        try:
            with open(cache.path, encoding="utf-8") as handle:
                data = json.load(handle)
            if isinstance(data, dict) and isinstance(data.get("entries"), dict):
                cache.entries = data["entries"]
                cache.stats = data.get("stats") if isinstance(data.get("stats"), dict) else {}
        except (OSError, ValueError):
            pass  # a missing or damaged cache is an empty one
        return cache

    def _key(self, path: str) -> Optional[str]:
        """The content key; a file whose size and mtime match the last run is not read again (as ruff does)."""
        absolute = os.path.abspath(path)
        try:
            info = os.stat(path)
        except OSError:
            return None
        signature = [info.st_mtime_ns, info.st_size]
        known = self.stats.get(absolute)
        if isinstance(known, list) and len(known) == 3 and known[:2] == signature:
            self.hashes[path] = known[2]
            return known[2]
        try:
            with open(path, "rb") as handle:
                digest = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            return None
        key = hashlib.sha256(f"{absolute}\0{digest}".encode()).hexdigest()
        self.hashes[path] = key
        self.stats[absolute] = signature + [key]
        self.dirty = True
        return key

    def get(self, path: str) -> Optional[FileReport]:
        key = self._key(path)
        entry = self.entries.get(key) if key else None
        if not isinstance(entry, dict):
            return None
        deps = entry.get("deps") or {}
        if not isinstance(deps, dict) or any(_digest(dep) != digest for dep, digest in deps.items()):
            return None  # a module it follows into changed: the finding may come or go
        try:
            return FileReport(path, [_finding(d) for d in entry["findings"]], error=entry.get("error"), deps=deps)
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, report: FileReport) -> None:
        key = self.hashes.get(report.path) or self._key(report.path)
        if key is None or (report.error and "permission" in report.error):
            return
        self.entries[key] = {"findings": [finding_to_dict(f) for f in report.findings], "error": report.error,
                             "deps": report.deps}
        self.dirty = True

    def flush(self) -> None:
        if not self.dirty:
            return
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, exist_ok=True)
            gitignore = os.path.join(directory, ".gitignore")
            if not os.path.exists(gitignore):
                with open(gitignore, "w") as handle:
                    handle.write("*\n")
            fd, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"version": __version__, "entries": self.entries, "stats": self.stats}, handle)
            os.replace(temporary, self.path)
        except OSError:
            pass  # an unwritable cache folder only costs speed


def _digest(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def _finding(data: dict) -> Finding:
    related = [Related(r["path"], r["line"], r["column"], r["role"], r["message"], r.get("cell")) for r in data["related"]]
    return Finding(
        data["path"], data["line"], data["column"], data["end_line"], data["end_column"], data["code"], data["name"],
        data["severity"], data["message"], related, data["fix"], cell=data.get("cell"),
    )
