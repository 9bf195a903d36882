#!/usr/bin/env python
"""Ecosystem check: lint pinned real PyTorch packages and diff the findings against a baseline.

Like ruff's ecosystem check (DESIGN.md section 2a). Every package in ``PACKAGES`` is downloaded
from PyPI at a pinned version (with the download/extract code of ``lint_pypi.py``) into
``benchmarks/_work/ecosystem/``, and linted with

    python -m ddp_lint check --output-format json --select ALL --isolated --no-cache -j 1 <dir>

using the ddp_lint source tree given by ``--ddp-lint-root`` (default: the repository this script
lives in), which is put first on PYTHONPATH.

Each finding is identified by a key that survives line shifts: (package, path relative to the
package, code, the stripped text of the reported source line, occurrence index among findings with
the same first four parts). The committed baseline ``benchmarks/ecosystem/baseline.json`` maps each
package to its findings; every finding carries a hand verdict (``true``: a real bug or a real
canonical-order violation in the sense of DESIGN.md section 1; ``false``: a false positive;
``null``: not reviewed yet) and a one-line ``why``.

The script prints the findings that APPEARED (not in the baseline) and DISAPPEARED (in the
baseline, not found now, with their recorded verdict), then a summary: findings now and in the
baseline, appeared/disappeared counts, precision over the verdicts (true / (true + false) among the
current findings that have one), how many current findings are unreviewed, and per-package counts.

``--update`` rewrites the baseline with the current findings, keeping verdict and why for every key
that matches and writing new findings with ``"verdict": null``. With ``--packages`` only those
packages' entries are replaced. The baseline's ``"_summary"`` entry is hand-written (the first-run
precision of each batch of packages added, recorded before any engine change) and kept as it is.

``HELD_OUT`` lists 20 packages kept aside, never linted or read, until the engine redesign is done:
``--held-out`` lints those instead of ``PACKAGES``, and its first run is the generalisation test.

Exit status: 0 normally, 1 when a current finding is unreviewed (verdict null or missing),
2 on errors (a package could not be downloaded or linted, ddp_lint crashed).

``--fix`` also runs ``--fix --unsafe-fixes`` on copies of the files that have findings (issue 13's
evidence on real code): every rewritten file must compile, a second pass must change nothing, and
every diff is printed for a hand judgement. A file that does not compile or is not idempotent
makes the exit status 2.

Usage:
    python benchmarks/ecosystem.py                      # download, lint, diff
    python benchmarks/ecosystem.py --offline            # reuse the downloads in the work dir
    python benchmarks/ecosystem.py --packages timm==0.9.16 --offline
    python benchmarks/ecosystem.py --ddp-lint-root /path/to/other/checkout --offline
    python benchmarks/ecosystem.py --offline --update   # then fill in the null verdicts by hand
    python benchmarks/ecosystem.py --offline --fix      # and list what --fix --unsafe-fixes does to them
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lint_pypi import count_py, fetch, rel  # noqa: E402  (reused, not copied)

REPO_ROOT = HERE.parent
DEFAULT_WORK = HERE / "_work" / "ecosystem"
DEFAULT_BASELINE = HERE / "ecosystem" / "baseline.json"

# Pinned releases that contain PyTorch training code: optimizer construction, .cuda()/.to(device),
# DDP / FSDP / ZeRO / DeepSpeed wrapping, EMA helpers, trainers and examples.
PACKAGES = [
    "pytorch-lightning==0.8.5",          # the seed case (optimizers before model.cuda in ddp_train)
    "pytorch-lightning==1.5.10.post0",   # after the fix: plugins, strategies, ZeRO, FSDP, DeepSpeed
    "lightning==2.2.5",                  # Fabric + Trainer, FSDP2-era strategies
    "ultralytics==8.1.47",               # YOLOv8 trainer, smart_optimizer, ModelEMA, DDP
    "yolov5==7.0.13",                    # train.py, smart_DDP, ModelEMA
    "fairseq==0.12.2",                   # sdist: trainer, FSDP, fp16 optimizers, examples
    "fastai==2.7.15",                    # Learner, distributed callbacks
    "catalyst==22.4",                    # engines: DP/DDP/AMP/DeepSpeed/FairScale
    "pytorch-ignite==0.4.13",            # auto_model / auto_optim
    "mosaicml==0.22.0",                  # composer: Trainer, FSDP, DeepSpeed, EMA
    "torchtune==0.2.1",                  # recipes in the wheel: FSDP, LoRA
    "speechbrain==1.0.0",                # Brain class: DDP, checkpoints, optimizers
    "monai==1.3.0",                      # engines, workflows, auto3dseg
    "allennlp==2.10.1",                  # GradientDescentTrainer, DDP, FairScale
    "mmengine==0.10.4",                  # Runner, model wrappers, optim wrappers
    "deepspeed==0.14.2",                 # sdist: engine, ZeRO, pipeline
    "accelerate==0.34.2",                # prepare(), FSDP/DeepSpeed plugins
    "transformers==4.40.2",              # Trainer, many model-specific training helpers
    "timm==0.9.16",                      # optim factory, ModelEmaV2, train helpers
    "stable-baselines3==2.3.2",          # policies build their optimizer, then .to(device)
    "tianshou==0.5.1",                   # RL policies and trainers
    "sentence-transformers==2.7.0",      # fit(), SentenceTransformer trainer
    "skorch==0.15.0",                    # NeuralNet.initialize_module / initialize_optimizer
    "poutyne==1.17.1",                   # Model wraps network + optimizer, .to(device)
    "pytorch-forecasting==1.0.0",        # Lightning modules with optimizers
    "flair==0.13.1",                     # ModelTrainer
    "peft==0.10.0",                      # adapters; optimizer on adapter params
    "trl==0.8.6",                        # PPO/DPO trainers with reference models
    "colossalai==0.3.6",                 # booster plugins, ZeRO, Gemini, examples
    "fairscale==0.4.13",                 # OSS, ShardedDDP, FSDP (sdist)
    "open-clip-torch==2.24.0",           # training/ scripts: DDP, amp
    "pyannote.audio==3.1.1",             # Lightning tasks
    "lightly==1.5.0",                    # self-supervised models, momentum encoders
    "pytorch-metric-learning==2.5.0",    # trainers, losses with parameters
    "espnet==202402",                    # espnet2 trainer: DDP, FairScale, optimizers
    "torchtnt==0.2.4",                   # AutoUnit, prepare_module, FSDP/DDP
    # ---- added for issue 26 (first run recorded in the baseline's summary before any engine change)
    # the three packages outside the list that were measured from outside
    "torchdistill==1.1.5",               # distillation: teacher/student wrappers, DDP, .half()
    "avalanche-lib==0.6.0",              # continual learning: strategies, make_optimizer, model adaptation
    "pytorch-widedeep==1.7.0",           # tabular/recommendation trainers
    # research toolkits and trainers
    "nemo-toolkit==3.0.0",               # NeMo: Lightning-based ASR/NLP/TTS, FSDP, megatron
    "megatron-core==0.19.2",             # distributed optimizer, DDP, FSDP
    "mmdet==3.3.0",                      # OpenMMLab detection (tools/, hooks)
    "mmpretrain==1.2.0",                 # OpenMMLab classification / self-supervised
    "mmsegmentation==1.2.2",             # OpenMMLab segmentation
    "mmocr==1.0.1",                      # OpenMMLab OCR
    "mmagic==1.2.0",                     # OpenMMLab generative: GAN optimizers, EMA
    "mmrazor==1.0.0",                    # distillation / NAS / quantization
    "mmdet3d==1.4.0",                    # 3D detection
    "torch-uncertainty==0.13.0",         # Lightning routines: ensembles, deep evidential, SWA/SWAG
    "lightning-bolts==0.7.0",            # Lightning models: GANs, SSL, RL
    "pytorch-pfn-extras==0.9.0",         # trainer extensions, distributed helpers
    "super-gradients==3.7.1",            # Deci trainer: DDP, EMA, QAT
    # RL
    "torchrl==0.14.1",                   # objectives, collectors, trainers
    "sb3-contrib==2.9.2",                # extra SB3 algorithms
    "rl-zoo3==2.9.2",                    # SB3 training scripts
    "garage==2021.3.0",                  # RL algorithms (torch backend)
    "mlagents==1.1.0",                   # Unity ML-Agents torch trainers
    # vision
    "torchgeo==0.10.1",                  # Lightning trainers for geospatial data
    "segmentation-models-pytorch==0.6.0",  # models, training utils
    "pytorch-toolbelt==0.8.0",           # training helpers, DDP utils
    "kornia==0.9.0",                     # x.trainer, augmentations with parameters
    "nerfstudio==1.1.5",                 # NeRF trainer: optimizers, DDP
    "python-doctr==1.1.0",               # OCR models (references not in the wheel)
    "insightface==2.1",                  # face recognition
    "autogluon-multimodal==1.6.3",       # AutoMM: Lightning, PEFT, distillation
    "fairchem-core==2.24.0",             # OCP trainers: DDP, EMA, AMP
    "torchgan==0.1.0",                   # GAN trainer
    # time series and tabular
    "gluonts==0.17.0",                   # torch models with Lightning
    "neuralforecast==3.3.0",             # Lightning forecasting models
    "u8darts==0.41.0",                   # darts: torch forecasting models
    "tsai==1.0.1",                       # fastai time series
    "pytorch-tabular==1.2.0",            # tabular models: Lightning, SSL pretraining
    "tabpfn==9.2.0",                     # fine-tuning code
    "uni2ts==2.0.0",                     # Moirai pretraining / fine-tuning
    "momentfm==0.1.4",                   # MOMENT time-series foundation model
    # speech and audio
    "funasr==1.4.16",                    # trainer with DDP/FSDP/DeepSpeed
    "audiocraft==1.3.0",                 # solvers: FSDP, EMA, optimizers
    "openspeech-core==0.4.0",            # Lightning speech models
    "audiolm-pytorch==2.4.0",            # trainers with accelerate
    "meshgpt-pytorch==1.8.1",            # trainers with accelerate
    # NLP and LLM fine-tuning
    "allennlp-models==2.10.1",           # models and training configs
    "ludwig==0.17.10",                   # trainers: DDP, DeepSpeed, Horovod
    "ai2-olmo==0.6.0",                   # OLMo trainer: FSDP, optimizer after wrap
    "llm-foundry==0.22.0",               # composer-based LLM training
    "nanotron==0.4",                     # 3D-parallel LLM training
    "openrlhf==0.11.2",                  # RLHF trainers: DeepSpeed, ray
    "llamafactory==0.9.5",               # fine-tuning: HF trainers, custom optimizers
    "axolotl==0.21.0",                   # fine-tuning: FSDP, DeepSpeed
    "xtuner==0.2.0",                     # mmengine-based LLM fine-tuning
    "ms-swift==4.6.0",                   # ModelScope fine-tuning
    "unsloth==2026.10.9",                # fast fine-tuning patches
    "fairseq2==0.8.1",                   # recipes: FSDP, DDP, optimizers
    "petals==2.2.0.post1",               # distributed inference/fine-tuning
    "optimum==2.3.0",                    # ONNX Runtime trainers
    "nemo-aligner==0.7.0",               # RLHF on NeMo
    "pytorch-ie==0.33.0",                # information extraction with Lightning
    "fair-esm==2.0.0",                   # protein language models, scripts
    # science, graphs, probabilistic
    "torch-geometric==2.8.1",            # GNNs: examples in the sdist, Lightning data
    "pyro-ppl==1.9.2",                   # SVI with optimizers, examples
    "gpytorch==1.15.2",                  # GPs trained with torch optimizers
    "botorch==0.18.1",                   # model fitting helpers
    "pykeen==1.11.1",                    # knowledge-graph training loops
    "deepchem==2.8.0",                   # TorchModel: optimizer, device
    "torchdrug==0.2.1",                  # engine: DDP, optimizer
    "nequip==0.19.1",                    # interatomic potentials, Lightning
    "mace-torch==0.3.16",                # interatomic potentials: DDP, EMA, SWA
    "matgl==4.1.2",                      # materials GNNs, Lightning
    "dglke==0.1.2",                      # knowledge-graph embeddings, multiprocess training
    # federated, robustness, compression
    "flwr==1.42.0",                      # federated clients with torch training
    "fedml==0.9.6",                      # federated trainers
    "adversarial-robustness-toolbox==1.20.1",  # PyTorchClassifier: optimizer, device
    "nni==3.0",                          # compression / NAS trainers
    "brevitas==0.13.4",                  # QAT examples
    "nncf==3.4.0",                       # compression-aware training
    "neural-compressor==3.10",           # Intel compression: QAT, distillation
    "torch-pruning==1.6.1",              # pruning with fine-tuning loops
    "salesforce-lavis==1.0.2",           # runners: DDP, optimizers
]

# Kept aside, unread, until the engine redesign (issue 27) is done: the first run over these is the
# generalisation test, reported as it comes out. `--held-out` lints only these.
HELD_OUT = [
    "mmaction2==1.2.0",
    "mmpose==1.3.2",
    "mmyolo==0.6.0",
    "colbert-ai==0.2.22",
    "setfit==1.2.0",
    "gliner==0.2.29",
    "chemprop==2.3.1",
    "torchmd-net==3.1.0",
    "chgnet==0.4.2",
    "alignn==2026.8.11",
    "skrl==2.1.1",
    "rsl-rl-lib==5.5.1",
    "chronos-forecasting==2.3.2",
    "optimum-habana==1.21.2",
    "pytorch-adapt==0.0.83",
    "deepforest==2.1.0",
    "mbrl==0.2.0",
    "voicebox-pytorch==0.5.0",
    "pykale==0.2.1",
    "span-marker==1.8.1",
]

VERDICT_NAMES = {True: "true", False: "false", None: "unreviewed"}


def log(msg: str = "") -> None:
    print(msg, flush=True)


# --------------------------------------------------------------------------- lint

def lint_env(root: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def check_root(root: Path) -> str:
    """Make sure ``python -m ddp_lint`` resolves to the sources under ``root``; return that file."""
    proc = subprocess.run([sys.executable, "-c", "import ddp_lint; print(ddp_lint.__file__)"],
                          capture_output=True, text=True, cwd=str(root), env=lint_env(root))
    where = proc.stdout.strip()
    if proc.returncode != 0 or not Path(where).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"ddp_lint does not import from {root}: {where or proc.stderr.strip()[-500:]}")
    return where


def lint(src: Path, root: Path, timeout: float) -> tuple[dict, float]:
    """Lint ``src`` with the ddp_lint under ``root``; exit status 0 (clean) and 1 (findings) are fine."""
    cmd = [sys.executable, "-m", "ddp_lint", "check", "--output-format", "json", "--select", "ALL",
           "--isolated", "--no-cache", "-j", "1", str(src)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(root),
                          env=lint_env(root))
    dt = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"ddp_lint exited {proc.returncode}:\n{proc.stderr.strip()[-2000:]}")
    try:
        return json.loads(proc.stdout), dt
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"ddp_lint printed no JSON ({exc}):\n{proc.stdout[:1000]}\n{proc.stderr[-1000:]}")


def fix_copies(spec: str, src: Path, entries: list[dict], root: Path, work: Path, timeout: float) -> tuple[list, list]:
    """`--fix --unsafe-fixes` on copies of the files with findings: (diffs, problems)."""
    paths = sorted({e["path"] for e in entries})
    if not paths:
        return [], []
    target = work / "fix" / spec
    shutil.rmtree(target, ignore_errors=True)
    for path in paths:
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / path, target / path)
    cmd = [sys.executable, "-m", "ddp_lint", "check", "--fix", "--unsafe-fixes", "--select", "ALL", "--isolated",
           "--no-cache", "-j", "1"]
    problems, diffs = [], []
    for attempt in ("first", "second"):
        before = {p: (target / p).read_text(encoding="utf-8", errors="surrogateescape") for p in paths}
        proc = subprocess.run(cmd + [str(target / p) for p in paths], capture_output=True, text=True, timeout=timeout,
                              cwd=str(root), env=lint_env(root))
        if proc.returncode not in (0, 1):
            problems.append(f"{spec}: --fix ({attempt} pass) exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
        for p in paths:
            after = (target / p).read_text(encoding="utf-8", errors="surrogateescape")
            if after == before[p]:
                continue
            if attempt == "second":
                problems.append(f"{spec}/{p}: the second --fix pass changed the file again")
                continue
            try:
                compile(after, p, "exec")
            except SyntaxError as exc:
                problems.append(f"{spec}/{p}: the fixed file does not compile: {exc}")
            diffs.append("".join(difflib.unified_diff(before[p].splitlines(keepends=True), after.splitlines(keepends=True),
                                                      f"a/{spec}/{p}", f"b/{spec}/{p}", n=1)))
    return diffs, problems


# --------------------------------------------------------------------------- keys

def source_line(src: Path, relpath: str, line: int, cache: dict) -> str:
    if relpath not in cache:
        try:
            cache[relpath] = (src / relpath).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            cache[relpath] = []
    lines = cache[relpath]
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def base_key(e: dict) -> tuple:
    return (e["package"], e["path"], e["code"], e["source_line"])


def key(e: dict) -> tuple:
    return base_key(e) + (e["occurrence"],)


def sort_entries(entries: list[dict]) -> list[dict]:
    return sorted(entries, key=lambda e: (e["package"], e["path"], e["line"], e.get("column", 0),
                                          e["code"], e["source_line"]))


def number_occurrences(entries: list[dict]) -> list[dict]:
    """Sort, then give each entry its index among the entries with the same base key."""
    seen: Counter = Counter()
    out = sort_entries(entries)
    for e in out:
        e["occurrence"] = seen[base_key(e)]
        seen[base_key(e)] += 1
    return out


def current_entries(spec: str, src: Path, data: dict) -> list[dict]:
    cache: dict = {}
    entries = []
    for fd in data.get("findings", []):
        path = rel(fd["path"], src)
        entries.append({
            "package": spec, "path": path, "line": fd["line"], "column": fd.get("column", 0),
            "code": fd["code"], "source_line": source_line(src, path, fd["line"], cache),
            "message": fd["message"],
        })
    return number_occurrences(entries)


# --------------------------------------------------------------------------- baseline

SUMMARY_KEY = "_summary"  # hand-written notes on the baseline (first-run precision per batch of packages)


def load_summary(path: Path) -> dict:
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8")).get(SUMMARY_KEY, {})


def load_baseline(path: Path) -> dict[str, list[dict]]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop(SUMMARY_KEY, None)
    out: dict[str, list[dict]] = {}
    for spec, entries in data.items():
        for e in entries:
            e.setdefault("package", spec)
            e.setdefault("occurrence", 0)
        out[spec] = entries
    return out


def write_baseline(path: Path, baseline: dict[str, list[dict]]) -> None:
    fields = ("package", "path", "line", "code", "source_line", "occurrence", "message", "verdict", "why")
    data = {spec: [{f: e.get(f) for f in fields} for e in sort_entries(entries)]
            for spec, entries in sorted(baseline.items())}
    summary = load_summary(path)
    if summary:
        data = {SUMMARY_KEY: summary, **data}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def fmt(e: dict) -> str:
    return f"{e['package']}  {e['path']}:{e['line']}: {e['code']} {e['message']}"


# --------------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packages", nargs="+", metavar="SPEC", default=None,
                    help="restrict to these specs (or bare names) from the pinned list")
    ap.add_argument("--held-out", action="store_true",
                    help="lint the packages kept aside for the generalisation test (HELD_OUT) instead of PACKAGES")
    ap.add_argument("--offline", action="store_true", help="reuse the downloads in the work dir")
    ap.add_argument("--update", action="store_true",
                    help="rewrite the baseline with the current findings, keeping matching verdicts")
    ap.add_argument("--ddp-lint-root", type=Path, default=REPO_ROOT,
                    help="ddp_lint source tree to run (default: %(default)s)")
    ap.add_argument("--baseline", type=Path, default=DEFAULT_BASELINE)
    ap.add_argument("--work-dir", type=Path, default=DEFAULT_WORK)
    ap.add_argument("--timeout", type=float, default=1800.0, help="per download / lint, in seconds")
    ap.add_argument("--fix", action="store_true",
                    help="also run --fix --unsafe-fixes on copies of the files with findings and print the diffs")
    args = ap.parse_args(argv)

    pool = HELD_OUT if args.held_out else PACKAGES
    specs = pool
    if args.packages:
        by_name = {s.split("==")[0]: s for s in pool}
        specs = []
        for p in args.packages:
            if p in pool:
                specs.append(p)
            elif p in by_name:
                specs.append(by_name[p])
            else:
                ap.error(f"{p!r} is not in the pinned list (edit PACKAGES or HELD_OUT to add it)")

    root = args.ddp_lint_root.resolve()
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        log(f"ddp_lint: {check_root(root)}")
    except RuntimeError as exc:
        log(f"ERROR: {exc}")
        return 2

    baseline = load_baseline(args.baseline)
    current: dict[str, list[dict]] = {}
    files: dict[str, int] = {}
    failed: dict[str, str] = {}
    lint_errors = 0
    for spec in specs:
        log(f"=== {spec}")
        try:
            src = fetch(spec, work, args.offline, args.timeout)
            files[spec] = count_py(src)
            data, dt = lint(src, root, args.timeout)
        except Exception as exc:  # noqa: BLE001 - report and go on with the next package
            failed[spec] = str(exc)
            log(f"    ERROR: {exc}")
            continue
        current[spec] = current_entries(spec, src, data)
        errs = data.get("errors", [])
        lint_errors += len(errs)
        log(f"    {files[spec]} .py files, {dt:.1f} s, {len(current[spec])} findings, {len(errs)} file errors")

    # ---- diff (only the packages that were linted)
    base_now = {spec: baseline.get(spec, []) for spec in current}
    base_by_key = {key(e): e for entries in base_now.values() for e in entries}
    cur_by_key = {key(e): e for entries in current.values() for e in entries}
    appeared = [e for k, e in cur_by_key.items() if k not in base_by_key]
    disappeared = [e for k, e in base_by_key.items() if k not in cur_by_key]
    for k, e in cur_by_key.items():
        b = base_by_key.get(k)
        e["verdict"] = b.get("verdict") if b else None
        e["why"] = b.get("why", "") if b else ""

    log("")
    log(f"=== APPEARED ({len(appeared)})")
    for e in sort_entries(appeared):
        log("  + " + fmt(e))
    log(f"=== DISAPPEARED ({len(disappeared)})")
    for e in sort_entries(disappeared):
        log("  - " + fmt(e) + f"   [verdict: {VERDICT_NAMES.get(e.get('verdict'), e.get('verdict'))}"
            + (f"; {e['why']}" if e.get("why") else "") + "]")

    # ---- summary
    verdicts = Counter(e["verdict"] for e in cur_by_key.values())
    reviewed = verdicts[True] + verdicts[False]
    log("")
    log("=== summary")
    log(f"{'package':34} {'files':>6} {'now':>5} {'base':>5} {'+':>4} {'-':>4} {'true':>5} {'false':>6} {'unrev':>6}  by code")
    for spec in specs:
        if spec in failed:
            log(f"{spec:34} FAILED: {failed[spec].splitlines()[0] if failed[spec] else ''}")
            continue
        cur = current[spec]
        v = Counter(e["verdict"] for e in cur)
        by = " ".join(f"{c}={n}" for c, n in sorted(Counter(e["code"] for e in cur).items()))
        log(f"{spec:34} {files[spec]:>6} {len(cur):>5} {len(base_now[spec]):>5} "
            f"{sum(e['package'] == spec for e in appeared):>4} {sum(e['package'] == spec for e in disappeared):>4} "
            f"{v[True]:>5} {v[False]:>6} {v[None]:>6}  {by}")
    by_code: dict[str, Counter] = defaultdict(Counter)
    for e in cur_by_key.values():
        by_code[e["code"]][e["verdict"]] += 1
    log("")
    for code in sorted(by_code):
        c = by_code[code]
        log(f"{code}: {sum(c.values())} findings, {c[True]} true, {c[False]} false, {c[None]} unreviewed")
    log("")
    log(f"findings now: {len(cur_by_key)}   in baseline: {sum(len(v) for v in base_now.values())}   "
        f"appeared: {len(appeared)}   disappeared: {len(disappeared)}")
    prec = f"{verdicts[True] / reviewed:.3f} ({verdicts[True]}/{reviewed})" if reviewed else "n/a"
    log(f"precision over verdicts: {prec}   unreviewed: {verdicts[None]}   "
        f"files: {sum(files.values())}   file errors: {lint_errors}   failed packages: {len(failed)}")

    if args.update:
        new = dict(baseline)
        for spec, entries in current.items():
            new[spec] = entries
        write_baseline(args.baseline, new)
        log(f"baseline written: {args.baseline}")

    fix_problems: list[str] = []
    if args.fix:
        log("")
        all_diffs = []
        for spec, entries in current.items():
            src = fetch(spec, work, True, args.timeout)
            diffs, problems = fix_copies(spec, src, entries, root, work, args.timeout)
            all_diffs += diffs
            fix_problems += problems
        log(f"=== FIXES ({len(all_diffs)} files rewritten by --fix --unsafe-fixes)")
        for diff in all_diffs:
            log(diff.rstrip("\n"))
            log("")
        for problem in fix_problems:
            log("  ! " + problem)
        log(f"fixed files: {len(all_diffs)}   problems (no compile / not idempotent / crash): {len(fix_problems)}")

    if failed or fix_problems:
        return 2
    return 1 if verdicts[None] else 0


if __name__ == "__main__":
    sys.exit(main())
