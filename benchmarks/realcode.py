#!/usr/bin/env python
"""Score ddp-lint on the hand-labelled real code of `benchmarks/realcode/` (recall and precision).

    python benchmarks/realcode.py                 # fetch the pinned packages, lint, score
    python benchmarks/realcode.py --offline       # reuse benchmarks/_work/realcode/
    python benchmarks/realcode.py --offline --verbose --json out.json
    python benchmarks/realcode.py --offline --each-file   # each labelled file in a run of its own
    python benchmarks/realcode.py --only repositories --mirror DIR --fetch-only   # while labelling

A label file's `spec` is a pinned package (`name==version`) or a repository at one commit
(`github:owner/name@<40 hex digits>`, linted from the repository's root, as a clone has it).

Each package is fetched as the ecosystem check fetches it (`lint_pypi.fetch`), and its labelled files
are linted the way a user meets the tool: from the package's top folder (so the project index finds
the package's other modules), `--select ALL --isolated --no-cache -j 1`. Findings are then matched to
the labels (README: "How the scorer matches") and scored twice, for the default selection and with
`--extend-select DDP201`: recall over the required pairs (overall, per tag, per kind) and precision
over every finding reported in a labelled file, duplicates of one pair counted false; findings that
match an optional pair are counted apart (neither true nor false).

`--each-file` lints each labelled file in a run of its own, as a pre-commit hook that sees one changed
script does (and a measurement that takes files one at a time): a pair whose other end is a function of
another labelled module is then reported on the caller's side too (one report per bug in each run).

Exit status: 0 when every package was linted, 2 when a label is malformed or a package could not be
fetched or linted (the scores then cover the rest).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO_ROOT))

from lint_pypi import extract, fetch  # noqa: E402  (reused, not copied)
from realcode_labels import (KINDS, LABELS, TAGS, WORK, LabelError, LabelledFile, Pair,  # noqa: E402
                             check_text, load, repository, slug)
from ddp_lint.rules.table import DEFAULT_SELECT, RULE_TABLE  # noqa: E402

# Which placement kinds each rule's finding can be a report of (a finding of another code on the same
# line is matched only when its related placement names the pair's placement).
CODE_KINDS = {
    "DDP001": {"replace", "move"},
    "DDP002": {"move", "cast", "fsdp-orig-params"},
    "DDP003": {"convert-after-wrap"},
    "DDP004": {"discarded-wrapper"},
    "DDP005": {"zero", "move", "cast"},
    "DDP101": {"move", "cast"},
    "DDP102": {"zero", "move"},
    "DDP103": {"fsdp-orig-params"},
    "DDP104": {"stepped-before-ddp"},
    "DDP201": {"wrap"},
    "DDP202": {"memory-format"},
}
DEFAULT_CODES = frozenset(c for c in RULE_TABLE if c.startswith(DEFAULT_SELECT))
SELECTIONS = {"default": DEFAULT_CODES, "default+DDP201": DEFAULT_CODES | {"DDP201"}}


@dataclass
class Finding:
    path: str  # relative to the package's extracted folder, like a label's path
    line: int
    code: str
    message: str
    related: tuple[tuple[str, int], ...]


@dataclass
class Scored:
    """One labelled file's findings matched to its pairs."""
    item: LabelledFile
    matched: dict[int, Finding] = field(default_factory=dict)  # index into required -> first finding
    optional_hits: list[Finding] = field(default_factory=list)
    false: list[tuple[Finding, str]] = field(default_factory=list)  # finding, why it is false


def fetch_repository(spec: str, work: Path, offline: bool, timeout: float, mirror: Path | None) -> Path:
    """A repository's files at the pinned commit, in `work/src/<slug>/` (its root, as a clone has it):
    from a local snapshot when `mirror` has one (`<owner>+<name>/` holding a git directory, a clone's
    or a bare one), else
    downloaded from GitHub's archive of that commit."""
    owner, name, commit = repository(spec)
    src = work / "src" / slug(spec)
    if src.is_dir() and any(src.iterdir()):
        return src
    git_dir = _snapshot(mirror / f"{owner}+{name}", commit) if mirror is not None else None
    if git_dir is not None:
        _write_python_files(git_dir, commit, src, timeout)
        return src
    if offline:
        raise RuntimeError(f"--offline: {spec} is not in {src}" + (f" nor in {mirror}" if mirror else ""))
    import urllib.request

    url = f"https://codeload.github.com/{owner}/{name}/tar.gz/{commit}"
    tarball = work / "downloads" / f"{slug(spec)}.tar.gz"
    tarball.parent.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(url, timeout=timeout) as response:
        tarball.write_bytes(response.read())
    extract(tarball, src)
    (top,) = list(src.iterdir())  # GitHub's archive holds one folder, `<name>-<commit>/`
    for child in top.iterdir():
        child.rename(src / child.name)
    top.rmdir()
    return src


def _write_python_files(git_dir: Path, commit: str, src: Path, timeout: float) -> None:
    """The commit's Python files (all the linter reads) written under `src`. A snapshot may lack its
    largest blobs (data files), which `git archive` refuses, so the files are read one by one."""
    listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", commit],
                             capture_output=True, timeout=timeout, check=True).stdout.decode("utf-8", "surrogateescape")
    wanted = []
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        _, kind, blob = meta.split()
        if kind == "blob" and path.endswith((".py", ".pyi")) and ".." not in Path(path).parts:
            wanted.append((blob, path))
    batch = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch"], input="".join(
        f"{blob}\n" for blob, _ in wanted).encode(), capture_output=True, timeout=timeout, check=True).stdout
    at = 0
    for blob, path in wanted:
        header_end = batch.index(b"\n", at)
        header = batch[at:header_end].split()
        if header[-1] == b"missing":
            at = header_end + 1
            continue
        size = int(header[2])
        body = batch[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
        target = src / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)


def _snapshot(folder: Path, commit: str) -> Path | None:
    """The git directory under `folder` that has `commit`, or None."""
    if not folder.is_dir():
        return None
    # a clone's `.git`, or a bare repository (a folder with `HEAD` and `objects/`) at any depth
    candidates = [folder, *sorted(folder.glob("**/.git")), *sorted(p.parent for p in folder.glob("**/HEAD"))]
    for git_dir in dict.fromkeys(c for c in candidates if (c / "objects").is_dir()):
        found = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "-e", f"{commit}^{{commit}}"],
                               capture_output=True)
        if found.returncode == 0:
            return git_dir
    return None


def package_root(src: Path, items: list[LabelledFile]) -> Path:
    """The folder a user would run the tool in: a repository's root, the archive's top folder (an
    sdist's `name-1.0/`), or the extraction folder itself for a wheel (whose first component is a
    Python package)."""
    if items and repository(items[0].spec) is not None:
        return src
    tops = {item.path.split("/", 1)[0] for item in items}
    if len(tops) == 1:
        top = src / tops.pop()
        if top.is_dir() and not (top / "__init__.py").exists():
            return top
    return src


def lint(root: Path, files: list[str], timeout: float) -> tuple[dict, float]:
    cmd = [sys.executable, "-m", "ddp_lint", "check", "--output-format", "json", "--select", "ALL", "--isolated",
           "--no-cache", "-j", "1", *files]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(root), env=env)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"ddp_lint exited {proc.returncode}: {proc.stderr.strip()[-1000:]}")
    return json.loads(proc.stdout), time.perf_counter() - t0


def findings_of(data: dict, root: Path, src: Path) -> list[Finding]:
    def relative(path: str) -> str:
        return Path(os.path.normpath(root / path)).relative_to(src).as_posix()

    out = []
    for fd in data.get("findings", []):
        related = tuple((relative(r["path"]), r["line"]) for r in fd.get("related", []) if r.get("path"))
        out.append(Finding(relative(fd["path"]), fd["line"], fd["code"], fd["message"], related))
    return sorted(out, key=lambda f: (f.path, f.line, f.code))


def _ends(pair: Pair) -> set[tuple[str, int]]:
    return {(pair.holder.path, pair.holder.line), (pair.placement.path, pair.placement.line)}


def match(item: LabelledFile, findings: list[Finding]) -> Scored:
    scored = Scored(item)
    pairs = [("required", i, p) for i, p in enumerate(item.required)] + [("optional", i, p) for i, p in enumerate(item.optional)]
    taken: set[tuple[str, int]] = set()
    near = {n.line for n in item.near_misses}
    for f in findings:
        best = None
        hit_any = False
        for group, i, pair in pairs:
            if f.line not in pair.lines_in(f.path):
                continue
            hit_any = True
            if (group, i) in taken:
                continue
            rel = bool(set(f.related) & _ends(pair))
            fits = pair.kind in CODE_KINDS.get(f.code, ())
            if not (rel or fits):
                continue
            score = (rel, fits, group == "required")
            if best is None or score > best[0]:
                best = (score, group, i)
        if best is not None:
            _, group, i = best
            taken.add((group, i))
            if group == "required":
                scored.matched[i] = f
            else:
                scored.optional_hits.append(f)
        elif hit_any:
            scored.false.append((f, "duplicate report of a labelled pair"))
        elif f.line in near:
            scored.false.append((f, "on a near-miss line"))
        else:
            scored.false.append((f, "on no labelled pair"))
    return scored


def score(results: list[Scored], codes: frozenset) -> dict:
    """Recall and precision for one selection of rules."""
    def selected(f: Finding) -> bool:
        return f.code in codes

    found, total = Counter(), Counter()
    by_kind_found, by_kind_total = Counter(), Counter()
    true = false = optional = named = elsewhere = 0
    matched_ends = matched_ends_of(results, selected)
    for r in results:
        for i, pair in enumerate(r.item.required):
            if pair.needs() is not None and pair.needs() not in codes:
                continue
            hit = i in r.matched and selected(r.matched[i])
            for counter, key in ((total, pair.tag), (by_kind_total, pair.kind)):
                counter[key] += 1
            if hit:
                found[pair.tag] += 1
                by_kind_found[pair.kind] += 1
                continue
            reported = reported_otherwise(r, pair, selected, matched_ends)
            named += reported == NAMED
            elsewhere += reported == ELSEWHERE
        true += sum(1 for f in r.matched.values() if selected(f))
        optional += sum(1 for f in r.optional_hits if selected(f))
        false += sum(1 for f, _ in r.false if selected(f))
    reported = true + false
    return {
        "recall": sum(found.values()) / sum(total.values()) if total else None,
        "found": sum(found.values()), "required": sum(total.values()),
        "by_tag": {t: (found[t], total[t]) for t in TAGS if total[t]},
        "by_kind": {k: (by_kind_found[k], by_kind_total[k]) for k in KINDS if by_kind_total[k]},
        "precision": true / reported if reported else None,
        "true": true, "false": false, "optional_hits": optional,
        # not recall: the unmatched pairs whose placement a true finding of the same holder names among its
        # related locations (one finding per holder lists every placement it reaches; a pair per placement)
        "named_by_another_pair_finding": named,
        # not recall either: unmatched pairs whose same two ends are labelled in another file of the
        # package and were found there (one bug, one report)
        "found_in_another_labelled_file": elsewhere,
    }


NAMED = "named as a related location of a finding of its holder"
ELSEWHERE = "found in another labelled file"


def matched_ends_of(results: list[Scored], selected) -> set:
    """The ends of every pair a selected finding matched, per package: a pair labelled in two files (a
    script and the class it calls) is one bug, which the engine reports once (in one of them)."""
    return {(r.item.spec, _pair_key(pair)) for r in results for i, pair in enumerate(r.item.required)
            if i in r.matched and selected(r.matched[i])}


def reported_otherwise(r: Scored, pair: Pair, selected, matched_ends: set) -> str | None:
    """For an unmatched pair: how the engine still reports its bug (not counted as recall), or None."""
    if any(selected(f) and f.code in CODE_KINDS and pair.kind in CODE_KINDS[f.code]
           and f.line in pair.lines_in(f.path) and (pair.placement.path, pair.placement.line) in f.related
           for f in r.matched.values()):
        return NAMED  # a finding that counts for another pair of this holder names this placement too
    if (r.item.spec, _pair_key(pair)) in matched_ends:
        return ELSEWHERE  # the same ends, labelled in another file too, were found there
    return None


def _pair_key(pair: Pair) -> tuple:
    return (pair.holder.path, pair.holder.line, pair.placement.path, pair.placement.line, pair.kind)


def ratio(a: int, b: int) -> str:
    return f"{a / b:.2f} ({a}/{b})" if b else "n/a"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--offline", action="store_true", help="reuse the downloads in the work dir")
    ap.add_argument("--labels", type=Path, default=LABELS, help="folder of label files (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=900.0, help="per download / lint, in seconds")
    ap.add_argument("--verbose", action="store_true", help="list every miss and every false finding")
    ap.add_argument("--json", type=Path, help="also write the scores and every match to this file")
    ap.add_argument("--mirror", type=Path, help="a folder of local repository snapshots (`<owner>+<name>/` "
                    "holding a git directory) to take pinned commits from before downloading them")
    ap.add_argument("--only", choices=("packages", "repositories"),
                    help="score only the label files of packages, or only those of repositories")
    ap.add_argument("--each-file", action="store_true",
                    help="lint each labelled file in a run of its own (default: a package's files in one run)")
    ap.add_argument("--fetch-only", action="store_true",
                    help="fetch and check the labelled lines' texts, lint nothing (for labelling before any run)")
    args = ap.parse_args(argv)

    by_spec: dict[str, list[LabelledFile]] = defaultdict(list)
    errors = 0
    for label_file in sorted(args.labels.glob("*.toml")):
        try:
            for item in load(label_file):
                if args.only is None or (repository(item.spec) is None) == (args.only == "packages"):
                    by_spec[item.spec].append(item)
        except LabelError as exc:
            print(f"ERROR {exc}")
            errors += 1

    results: list[Scored] = []
    seconds = 0.0
    for spec in sorted(by_spec):
        items = by_spec[spec]
        try:
            if repository(spec) is not None:
                src = fetch_repository(spec, WORK, args.offline, args.timeout, args.mirror)
            else:
                src = fetch(spec, WORK, args.offline, args.timeout)
            problems = [p for item in items for p in check_text(item, src)]
            if problems:
                raise RuntimeError("labels do not fit the files: " + "; ".join(problems))
            if args.fetch_only:
                continue
            root = package_root(src, items)
            files = sorted({os.path.relpath(src / item.path, root) for item in items})
            runs = [[file] for file in files] if args.each_file else [files]
            data, dt = {"findings": []}, 0.0
            for run in runs:
                part, took = lint(root, run, args.timeout)
                data["findings"].extend(part.get("findings", []))
                dt += took
        except Exception as exc:  # noqa: BLE001 - report and go on with the next package
            print(f"ERROR {spec}: {exc}")
            errors += 1
            continue
        seconds += dt
        findings = findings_of(data, root, src)
        for item in items:
            results.append(match(item, [f for f in findings if f.path == item.path]))

    if args.fetch_only:
        print(f"{len(by_spec) - errors} of {len(by_spec)} fetched, every labelled line checked; nothing linted")
        return 2 if errors else 0
    files = len(results)
    positives = sum(r.item.positive for r in results)
    print(f"{files} files ({positives} positive) from {len(by_spec)} packages; "
          f"{sum(len(r.item.required) for r in results)} required pairs, "
          f"{sum(len(r.item.optional) for r in results)} optional, "
          f"{sum(len(r.item.near_misses) for r in results)} near misses; lint {seconds:.1f} s")
    report = {}
    for name, codes in SELECTIONS.items():
        s = report[name] = score(results, codes)
        print(f"\n=== {name}: recall {ratio(s['found'], s['required'])}   "
              f"precision {ratio(s['true'], s['true'] + s['false'])}   (optional pairs reported: {s['optional_hits']})")
        for tag, (f, t) in s["by_tag"].items():
            print(f"    {tag:24} {ratio(f, t)}")
        print("    by kind: " + ", ".join(f"{k} {f}/{t}" for k, (f, t) in s["by_kind"].items()))
        if s["named_by_another_pair_finding"]:
            print(f"    and {s['named_by_another_pair_finding']} more pairs named as related locations of a finding "
                  f"matched to another pair of their holder (one pair per finding above; counting these too: "
                  f"{ratio(s['found'] + s['named_by_another_pair_finding'], s['required'])})")
        if s["found_in_another_labelled_file"]:
            print(f"    and {s['found_in_another_labelled_file']} more pairs labelled in another file too, with the same "
                  f"two ends, and found there (one report per bug; not counted above)")

    if args.verbose:
        print("\n=== missed required pairs (marked: how the default selection still reports the bug)")
        in_default = DEFAULT_CODES.__contains__
        default_ends = matched_ends_of(results, lambda f: in_default(f.code))
        for r in results:
            for i, pair in enumerate(r.item.required):
                if i not in r.matched:
                    otherwise = reported_otherwise(r, pair, lambda f: in_default(f.code), default_ends)
                    print(f"  - {r.item.spec} {r.item.path}:{pair.holder.line} -> {pair.placement.path}:{pair.placement.line}"
                          f" [{pair.kind}, {pair.tag}]{f' ({otherwise})' if otherwise else ''} {pair.why}")
        print("\n=== false findings")
        for r in results:
            for f, why in r.false:
                print(f"  x {r.item.spec} {f.path}:{f.line} {f.code} ({why}): {f.message[:300]}")

    if args.json:
        detail = [{"spec": r.item.spec, "path": r.item.path,
                   "matched": {str(i): f.__dict__ for i, f in r.matched.items()},
                   "optional_hits": [f.__dict__ for f in r.optional_hits],
                   "false": [dict(f.__dict__, why=why) for f, why in r.false]} for r in results]
        args.json.write_text(json.dumps({"scores": report, "files": detail}, indent=1, default=list) + "\n")
    return 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
