#!/usr/bin/env python
"""Run ddp-lint over real training code downloaded from PyPI.

This is a benchmark / smoke check, not a test: it downloads packages.

For every package spec it:
  1. runs ``pip download --no-deps --no-binary :none: SPEC`` into ``WORK/downloads/<spec>/``
     (falls back to ``--only-binary :all:`` if building sdist metadata fails),
  2. extracts the wheel / sdist (.whl, .zip, .tar.gz, .tgz, .tar.bz2) into ``WORK/src/<spec>/``,
  3. runs ``python -m ddp_lint check --output-format json --extend-select DDP201 --isolated --no-cache <dir>``,
  4. prints the number of Python files, the wall time and every finding as ``path:line: CODE message``.

At the end it prints a summary table and whether the seed finding was found: Lightning 0.8.5's
``pytorch_lightning/trainer/distrib_data_parallel.py`` (``ddp_train``) builds the optimizers with
``self.init_optimizers(model)`` before ``model.cuda(self.root_gpu)``. ``SEED FOUND`` or
``SEED MISSING`` is printed; the exit status is 1 when it is missing (or when the seed package was
not part of the run / could not be linted).

Usage:
    python benchmarks/lint_pypi.py [--work-dir benchmarks/_work] [--packages SPEC ...] [--offline]
                                   [--download-only] [--timeout S]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
DEFAULT_WORK = HERE / "_work"

SEED_SPEC = "pytorch-lightning==0.8.5"
SEED_FILE = "pytorch_lightning/trainer/distrib_data_parallel.py"
# The seed is a stateless optimizer built before `model.cuda(self.root_gpu)`, nothing loaded or
# stepped in between: DDP101 and nothing else.
SEED_CODES = {"DDP101"}
# The seed statement is located by text in the downloaded source, so that the check does not
# depend on a hard-coded line number (it is line 522 in the 0.8.5 wheel).
SEED_PATTERN = re.compile(r"self\.init_optimizers\(model\)")

DEFAULT_PACKAGES = [
    SEED_SPEC,               # the seed case (Lightning-AI/pytorch-lightning#2902 / PR #2904)
    # 1.5.10 itself has metadata (`torch (>=1.7.*)`) that pip >= 24.1 rejects; .post0 is the same code.
    "pytorch-lightning==1.5.10.post0",  # after the fix; plugins, strategies, ZeRO, FSDP, DeepSpeed
    "pytorch-ignite==0.4.13",     # auto_model / auto_optim helpers, examples in package
    "timm==0.9.16",               # train helpers, optim factory, model EMA
    "accelerate==0.34.2",         # prepare(), FSDP/DeepSpeed plugins, many placements
    "torchtnt==0.2.4",            # trainer framework: AutoUnit, prepare_module, FSDP/DDP
]


@dataclass
class Result:
    spec: str
    ok: bool = False
    error: str = ""
    files: int = 0
    seconds: float = 0.0
    findings: list = field(default_factory=list)
    lint_errors: list = field(default_factory=list)
    src_dir: Path | None = None


def slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", spec)


def log(msg: str) -> None:
    print(msg, flush=True)


# --------------------------------------------------------------------------- download / extract

def _legacy_pip(downloads: Path, timeout: float) -> Path:
    """pip 24.0's wheel, downloaded once beside the packages (a wheel of pip runs as `python pip.whl/pip`)."""
    folder = downloads / "_pip-24.0"
    wheels = sorted(folder.glob("pip-24.0-*.whl")) if folder.is_dir() else []
    if not wheels:
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                        "--dest", str(folder), "pip==24.0"], capture_output=True, text=True, timeout=timeout)
        wheels = sorted(folder.glob("pip-24.0-*.whl"))
    return (wheels[0] / "pip") if wheels else Path("pip-24.0-unavailable")


def download(spec: str, dest: Path, timeout: float) -> Path:
    """Download one distribution of ``spec`` into ``dest``; return the archive path."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
            "--dest", str(dest)]
    attempts = [
        base + ["--no-binary", ":none:", spec],
        # sdists of old releases sometimes fail to build metadata on a modern Python;
        # a wheel only needs unpacking.
        base + ["--only-binary", ":all:", spec],
        # last resort: ignore Requires-Python / platform checks for pure-python wheels
        base + ["--only-binary", ":all:", "--ignore-requires-python", spec],
    ]
    # Old releases whose metadata a current pip refuses (`torch (>=1.7.*)`, `scikit-image (<0.19.0>=0.16.1)`):
    # pip 24.0, run from its own wheel, still reads them.
    attempts.append([sys.executable, str(_legacy_pip(dest.parent, timeout)), *base[3:], "--no-binary", ":none:", spec])
    last = ""
    for cmd in attempts:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        archives = sorted(p for p in dest.iterdir() if p.is_file())
        if proc.returncode == 0 and archives:
            return archives[0]
        last = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        last = "\n".join(last)
        for p in dest.iterdir():
            if p.is_file():
                p.unlink()
    raise RuntimeError(f"pip download failed for {spec}:\n{last}")


def _safe_members_tar(tf: tarfile.TarFile, target: Path):
    root = target.resolve()
    for m in tf.getmembers():
        if not (m.isfile() or m.isdir()):
            continue
        out = (target / m.name).resolve()
        if root != out and root not in out.parents:
            continue
        yield m


def extract(archive: Path, target: Path) -> Path:
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    name = archive.name.lower()
    if name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as zf:
            root = target.resolve()
            for info in zf.infolist():
                out = (target / info.filename).resolve()
                if root != out and root not in out.parents:
                    continue
                zf.extract(info, target)
    elif name.endswith((".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar")):
        with tarfile.open(archive) as tf:
            tf.extractall(target, members=list(_safe_members_tar(tf, target)))
    else:
        raise RuntimeError(f"unknown archive type: {archive.name}")
    return target


def fetch(spec: str, work: Path, offline: bool, timeout: float) -> Path:
    dl = work / "downloads" / slug(spec)
    src = work / "src" / slug(spec)
    if offline:
        if src.is_dir() and any(src.iterdir()):
            return src
        archives = sorted(p for p in dl.iterdir() if p.is_file()) if dl.is_dir() else []
        if not archives:
            raise RuntimeError(f"--offline: nothing for {spec} in {work}")
        return extract(archives[0], src)
    archive = download(spec, dl, timeout)
    return extract(archive, src)


# --------------------------------------------------------------------------- lint

def count_py(src: Path) -> int:
    return sum(1 for _ in src.rglob("*.py"))


def lint(src: Path, timeout: float) -> tuple[dict, float]:
    # exit status: 0 clean, 1 findings, 2 error
    # --isolated: the work dir sits inside this repo, so its pyproject.toml (excludes, ignores) must not
    # apply; --no-cache: the wall time should measure analysis, not cache hits.
    cmd = [sys.executable, "-m", "ddp_lint", "check", "--output-format", "json",
           "--extend-select", "DDP201", "--isolated", "--no-cache", str(src)]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(REPO_ROOT), env=env)
    dt = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"ddp_lint exited {proc.returncode}:\n{proc.stderr.strip()[-2000:]}")
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"ddp_lint printed no JSON ({exc}):\n{proc.stdout[:1000]}\n{proc.stderr[-1000:]}")
    return data, dt


def rel(path: str, src: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(src.resolve()))
    except ValueError:
        return path


def seed_line(src: Path) -> tuple[Path, int] | None:
    for f in src.rglob("distrib_data_parallel.py"):
        if not f.as_posix().endswith(SEED_FILE):
            continue
        for i, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if SEED_PATTERN.search(line):
                return f, i
    return None


def check_seed(res: Result) -> tuple[bool, str]:
    if res.src_dir is None or not res.ok:
        return False, f"{SEED_SPEC} was not linted ({res.error or 'not run'})"
    loc = seed_line(res.src_dir)
    if loc is None:
        return False, f"{SEED_FILE} with `self.init_optimizers(model)` not found in the download"
    f, line = loc
    want = rel(str(f), res.src_dir)
    for fd in res.findings:
        if rel(fd["path"], res.src_dir) == want and fd["line"] == line and fd["code"] in SEED_CODES:
            return True, f"{want}:{line}: {fd['code']} {fd['message']}"
    near = [fd for fd in res.findings if rel(fd["path"], res.src_dir) == want]
    extra = "; findings in that file: " + ", ".join(f"{d['line']}:{d['code']}" for d in near) if near else ""
    return False, f"expected DDP101 at {want}:{line}{extra}"


# --------------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work-dir", type=Path, default=DEFAULT_WORK)
    ap.add_argument("--packages", nargs="+", metavar="SPEC", default=None,
                    help=f"package specs (default: {' '.join(DEFAULT_PACKAGES)})")
    ap.add_argument("--offline", action="store_true", help="reuse downloads/extractions in the work dir")
    ap.add_argument("--download-only", action="store_true", help="download and extract, do not lint")
    ap.add_argument("--timeout", type=float, default=600.0, help="per-step timeout in seconds")
    args = ap.parse_args(argv)

    specs = args.packages or DEFAULT_PACKAGES
    work: Path = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)

    results: list[Result] = []
    for spec in specs:
        res = Result(spec)
        results.append(res)
        log(f"=== {spec}")
        try:
            res.src_dir = fetch(spec, work, args.offline, args.timeout)
            res.files = count_py(res.src_dir)
            log(f"    source: {res.src_dir} ({res.files} .py files)")
            if args.download_only:
                res.ok = True
                continue
            data, res.seconds = lint(res.src_dir, args.timeout)
            res.findings = sorted(data.get("findings", []),
                                  key=lambda d: (d.get("path", ""), d.get("line", 0), d.get("column", 0)))
            res.lint_errors = data.get("errors", [])
            res.ok = True
        except Exception as exc:  # noqa: BLE001 - report and go on with the next package
            res.error = str(exc)
            log(f"    ERROR: {exc}")
            continue
        log(f"    files: {res.files}   wall: {res.seconds:.2f}s   findings: {len(res.findings)}"
            f"   errors: {len(res.lint_errors)}")
        for fd in res.findings:
            log(f"    {rel(fd['path'], res.src_dir)}:{fd['line']}: {fd['code']} {fd['message']}")
        for err in res.lint_errors:
            log(f"    error: {err if isinstance(err, str) else json.dumps(err)}")

    log("")
    log("=== summary")
    log(f"{'package':34} {'files':>6} {'wall s':>8} {'findings':>9} {'errors':>7}  by code")
    tot_files = tot_find = 0
    tot_time = 0.0
    for r in results:
        if not r.ok:
            log(f"{r.spec:34} {'-':>6} {'-':>8} {'-':>9} {'-':>7}  FAILED: {r.error.splitlines()[0] if r.error else ''}")
            continue
        codes: dict[str, int] = {}
        for fd in r.findings:
            codes[fd["code"]] = codes.get(fd["code"], 0) + 1
        by = " ".join(f"{c}={n}" for c, n in sorted(codes.items()))
        log(f"{r.spec:34} {r.files:>6} {r.seconds:>8.2f} {len(r.findings):>9} {len(r.lint_errors):>7}  {by}")
        tot_files += r.files
        tot_find += len(r.findings)
        tot_time += r.seconds
    log(f"{'total':34} {tot_files:>6} {tot_time:>8.2f} {tot_find:>9}")

    if args.download_only:
        seed = next((r for r in results if r.spec == SEED_SPEC and r.ok), None)
        if seed is not None:
            loc = seed_line(seed.src_dir)
            if loc:
                log(f"seed statement: {rel(str(loc[0]), seed.src_dir)}:{loc[1]}")
        return 0 if all(r.ok for r in results) else 1

    seed = next((r for r in results if r.spec == SEED_SPEC), None)
    if seed is None:
        log(f"SEED MISSING ({SEED_SPEC} not in the package list)")
        return 1
    found, detail = check_seed(seed)
    log(("SEED FOUND: " if found else "SEED MISSING: ") + detail)
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
