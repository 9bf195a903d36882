#!/usr/bin/env python
"""Load and check the hand labels of `benchmarks/realcode/` (the format is in its README).

    python benchmarks/realcode_labels.py [LABEL.toml ...]      # default: every file in realcode/labels/

Checks each label file's fields, and, where the package has been fetched into
`benchmarks/_work/realcode/`, that every labelled line holds the text the label says it holds. It never
runs the linter, so it can be run while labelling. Exit status 0 when every label is well formed,
1 otherwise.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
LABELS = HERE / "realcode" / "labels"
WORK = HERE / "_work" / "realcode"

# kind -> the rule that must be selected for a pair of that kind to count toward recall (None: default selection).
KINDS = {
    "move": None, "cast": None, "replace": None, "fsdp-orig-params": None, "zero": None,
    "convert-after-wrap": None, "discarded-wrapper": None, "stepped-before-ddp": None,
    "wrap": "DDP201", "memory-format": "DDP202",
}
TAGS = ("one-scope", "alias-or-container", "across-methods", "across-modules", "optimizer-as-parameter", "dynamic")


@dataclass(frozen=True)
class End:
    path: str
    line: int
    text: str


@dataclass(frozen=True)
class Pair:
    holder: End
    placement: End
    kind: str
    tag: str
    why: str
    via: tuple[int, ...] = ()

    def lines_in(self, path: str) -> set[int]:
        """The lines of `path` where a report of this pair is right."""
        lines = {end.line for end in (self.holder, self.placement) if end.path == path}
        return lines | set(self.via)

    def needs(self) -> str | None:
        return KINDS[self.kind]


@dataclass(frozen=True)
class NearMiss:
    line: int
    text: str
    why: str


@dataclass
class LabelledFile:
    spec: str
    path: str
    positive: bool
    note: str
    required: list[Pair] = field(default_factory=list)
    optional: list[Pair] = field(default_factory=list)
    near_misses: list[NearMiss] = field(default_factory=list)


class LabelError(ValueError):
    pass


def _need(table: dict, key: str, kind: type, where: str):
    if key not in table:
        raise LabelError(f"{where}: missing `{key}`")
    value = table[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise LabelError(f"{where}: `{key}` must be {kind.__name__}, not {type(value).__name__}")
    return value


def _pair(table: dict, path: str, where: str) -> Pair:
    kind = _need(table, "kind", str, where)
    if kind not in KINDS:
        raise LabelError(f"{where}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
    tag = _need(table, "tag", str, where)
    if tag not in TAGS:
        raise LabelError(f"{where}: unknown tag {tag!r} (one of {', '.join(TAGS)})")
    via = table.get("via", [])
    if not isinstance(via, list) or not all(isinstance(v, int) for v in via):
        raise LabelError(f"{where}: `via` must be a list of line numbers")
    known = {"holder", "holder_text", "holder_path", "placement", "placement_text", "placement_path", "kind", "tag",
             "why", "via"}
    extra = set(table) - known
    if extra:
        raise LabelError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
    return Pair(
        holder=End(table.get("holder_path", path), _need(table, "holder", int, where),
                   _need(table, "holder_text", str, where)),
        placement=End(table.get("placement_path", path), _need(table, "placement", int, where),
                      _need(table, "placement_text", str, where)),
        kind=kind, tag=tag, why=_need(table, "why", str, where), via=tuple(via))


def load(label_file: Path) -> list[LabelledFile]:
    """Every labelled file of one package's label file; raises LabelError on a malformed label."""
    try:
        data = tomllib.loads(label_file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LabelError(f"{label_file.name}: {exc}") from None
    spec = _need(data, "spec", str, label_file.name)
    if "==" not in spec and repository(spec) is None:
        raise LabelError(f"{label_file.name}: spec {spec!r} is not pinned (name==version, or "
                         f"github:owner/name@<the commit's 40 hex digits>)")
    out = []
    for i, entry in enumerate(data.get("files", [])):
        path = _need(entry, "path", str, f"{label_file.name} files[{i}]")
        where = f"{label_file.name} {path}"
        item = LabelledFile(spec=spec, path=path, positive=_need(entry, "positive", bool, where),
                            note=entry.get("note", ""))
        item.required = [_pair(t, path, f"{where} required[{j}]") for j, t in enumerate(entry.get("required", []))]
        item.optional = [_pair(t, path, f"{where} optional[{j}]") for j, t in enumerate(entry.get("optional", []))]
        for j, t in enumerate(entry.get("near_miss", [])):
            w = f"{where} near_miss[{j}]"
            item.near_misses.append(NearMiss(_need(t, "line", int, w), _need(t, "text", str, w), _need(t, "why", str, w)))
        if item.positive != bool(item.required):
            raise LabelError(f"{where}: positive = {item.positive} but {len(item.required)} required pair(s)")
        out.append(item)
    if not out:
        raise LabelError(f"{label_file.name}: no [[files]]")
    return out


def load_all(folder: Path = LABELS) -> list[LabelledFile]:
    files = []
    for label_file in sorted(folder.glob("*.toml")):
        files += load(label_file)
    return files


# A repository pinned to one commit: research training code lives in repositories more than in packages.
REPOSITORY_SPEC = re.compile(r"github:([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)@([0-9a-f]{40})")


def repository(spec: str) -> tuple[str, str, str] | None:
    """(owner, name, commit) of a repository spec, None for a package's."""
    match = REPOSITORY_SPEC.fullmatch(spec)
    return match.groups() if match else None


def slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", spec)


def check_text(item: LabelledFile, root: Path) -> list[str]:
    """Problems with the labelled lines of one file inside the package extracted at ``root``."""
    problems = []
    cache: dict[str, list[str]] = {}

    def line_of(path: str, line: int) -> str | None:
        if path not in cache:
            try:
                cache[path] = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                cache[path] = []
                problems.append(f"{item.spec} {path}: no such file")
        lines = cache[path]
        return lines[line - 1] if 0 < line <= len(lines) else None

    ends = [(e, "holder") for p in item.required + item.optional for e in [p.holder]]
    ends += [(e, "placement") for p in item.required + item.optional for e in [p.placement]]
    ends += [(End(item.path, n.line, n.text), "near_miss") for n in item.near_misses]
    for end, role in ends:
        text = line_of(end.path, end.line)
        if text is None:
            problems.append(f"{item.spec} {end.path}:{end.line}: {role} line is past the end of the file")
        elif end.text not in text:
            problems.append(f"{item.spec} {end.path}:{end.line}: {role} text {end.text!r} is not on that line: {text.strip()!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    targets = [Path(a) for a in args] or sorted(LABELS.glob("*.toml"))
    bad = 0
    total = 0
    for target in targets:
        try:
            items = load(target)
        except LabelError as exc:
            print(f"ERROR {exc}")
            bad += 1
            continue
        for item in items:
            total += 1
            root = WORK / "src" / slug(item.spec)
            if not root.is_dir():
                print(f"note: {item.spec} not fetched into {root}; line texts not checked")
                continue
            for problem in check_text(item, root):
                print(f"ERROR {problem}")
                bad += 1
    print(f"{total} labelled files in {len(targets)} label file(s), {bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
