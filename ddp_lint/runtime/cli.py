"""Command lines of `ddp-lint run` and `ddp-lint verify` (argv without the subcommand word).

Exit codes: 0 clean; 1 an error-class finding fired or the script failed (run), or the fixed
script is not clean (verify); 2 bad usage or a missing dependency, always one line on stderr.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import List, NoReturn, Optional

from .config import DEFAULT_CHECK_EVERY, MonitorConfig

# ddp-lint itself is installed from its repository, so the hint names torch's own package and index,
# never an extra of a package the index does not have.
NEEDS_TORCH = ("ddp-lint {command} needs torch, which is not installed: pip install torch "
               "(CPU only: pip install torch --index-url https://download.pytorch.org/whl/cpu)")
DEFAULT_TIMEOUT = 600.0


class _UsageError(Exception):
    pass


class _ParserExit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad usage as one line instead of exiting with a usage block."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.prog}: error: {message}")

    def exit(self, status: int = 0, message: Optional[str] = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise _ParserExit(status)


def torch_available() -> bool:
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # ValueError: sys.modules["torch"] is None (blocked)
        return False


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value:g}")
    return value


def _add_launch_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nproc-per-node", "--nproc_per_node", "--nproc", dest="nproc", type=_positive_int,
                        default=1, metavar="N", help="processes to start (torchrun when N > 1; default 1)")
    parser.add_argument("--backend", choices=("gloo", "nccl"), default=None,
                        help="force this torch.distributed backend on the script's init_process_group")
    parser.add_argument("--max-steps", type=_positive_int, default=None, metavar="K",
                        help="stop the script cleanly after K optimizer steps")
    parser.add_argument("--check-every", type=_positive_int, default=DEFAULT_CHECK_EVERY, metavar="N",
                        help=f"full invariant and cross-rank checks every N steps, besides the first ones "
                             f"(default {DEFAULT_CHECK_EVERY})")
    parser.add_argument("--timeout", type=_positive_float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"stop the script and every process it started after this long "
                             f"(default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--launcher", choices=("auto", "torchrun", "direct"), default="auto",
                        help="auto: torchrun for N > 1, a plain process for N = 1")
    parser.add_argument("--output-format", choices=("text", "json"), default="text")
    parser.add_argument("script", metavar="SCRIPT")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARGS")


def _run_parser() -> _Parser:
    parser = _Parser(prog="ddp-lint run",
                     description="Run a training script under torchrun with the ddp-lint monitor in every rank.")
    parser.add_argument("--quiet", action="store_true", help="do not copy the script's output to stderr")
    _add_launch_options(parser)
    return parser


def _verify_parser() -> _Parser:
    parser = _Parser(prog="ddp-lint verify",
                     description="Fix a copy of the script, run both under the monitor, compare.")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed set in both runs before the script starts (default 0)")
    parser.add_argument("--show-output", action="store_true", help="copy both scripts' output to stderr")
    _add_launch_options(parser)
    return parser


def _parse(parser: _Parser, argv: List[str]) -> argparse.Namespace:
    args = parser.parse_args(argv)
    if args.nproc > 1 and args.launcher == "direct":
        parser.error("--launcher direct starts one process; use torchrun for --nproc-per-node > 1")
    if not os.path.isfile(args.script):
        parser.error(f"no such script: {args.script}")
    return args


def _spec(args: argparse.Namespace, echo: Optional[object], trace: bool, seed: Optional[int]) -> "object":
    from .launcher import LaunchSpec

    config = MonitorConfig(check_every=args.check_every, max_steps=args.max_steps, trace=trace, seed=seed,
                           backend=args.backend)
    return LaunchSpec(script=os.path.abspath(args.script), script_args=list(args.script_args), nproc=args.nproc,
                      launcher=args.launcher, timeout=args.timeout, config=config, echo=echo)  # type: ignore[arg-type]


def _entry(command: str, parser: _Parser, argv: List[str]) -> Optional[argparse.Namespace]:
    try:
        args = _parse(parser, argv)
    except _UsageError as exc:
        print(str(exc).splitlines()[0], file=sys.stderr)
        return None
    if not torch_available():
        print(NEEDS_TORCH.format(command=command), file=sys.stderr)
        return None
    return args


def run_main(argv: List[str]) -> int:
    """`ddp-lint run [options] SCRIPT [ARGS...]`."""
    from .launcher import launch
    from .report import build_report, exit_status, render_json, render_text

    try:
        args = _entry("run", _run_parser(), argv)
    except _ParserExit as exc:
        return exc.status
    if args is None:
        return 2
    spec = _spec(args, None if args.quiet else sys.stderr, trace=False, seed=None)
    try:
        result = launch(spec)  # type: ignore[arg-type]
    except KeyboardInterrupt:  # the launcher has already stopped every process of the run
        print("ddp-lint run: interrupted", file=sys.stderr)
        return 130
    report = build_report(args.script, args.nproc, result, args.timeout)
    sys.stdout.write(render_json(report) if args.output_format == "json" else render_text(report))
    return exit_status(report)


def verify_main(argv: List[str]) -> int:
    """`ddp-lint verify [options] SCRIPT [ARGS...]`."""
    from .verify import VerifyUnavailable, render_json, render_text, run_verify

    try:
        args = _entry("verify", _verify_parser(), argv)
    except _ParserExit as exc:
        return exc.status
    if args is None:
        return 2
    spec = _spec(args, sys.stderr if args.show_output else None, trace=True, seed=args.seed)
    try:
        result = run_verify(args.script, list(args.script_args), spec)  # type: ignore[arg-type]
    except KeyboardInterrupt:
        print("ddp-lint verify: interrupted", file=sys.stderr)
        return 130
    except VerifyUnavailable as exc:
        print(str(exc).splitlines()[0], file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"ddp-lint verify: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(render_json(result) if args.output_format == "json" else render_text(result))
    return result.exit_code
