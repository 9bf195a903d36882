"""Command lines of `ddp-lint run` and `ddp-lint verify` (argv without the subcommand word).

Exit codes: 0 clean; 1 an error-class finding fired or the script failed (run), or the fixed
script is not clean (verify); 2 bad usage or a missing dependency, always one line on stderr;
3 (multi-node run) some node never reported to node 0, or node 0 could not be reached;
130 interrupted (SIGINT or SIGTERM; every process of the run stopped).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
from typing import Any, List, NoReturn, Optional

from .config import DEFAULT_CHECK_EVERY, MonitorConfig
from .nodes import NodeLaunch, NodeOptionError, from_slurm, parse_nnodes, slurm_step_detected, split_endpoint

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


# argparse names the type function in its message when it raises ValueError (`invalid _positive_int
# value`): these raise ArgumentTypeError, whose text is shown as it is.
def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value:g}")
    return value


def _add_launch_options(parser: argparse.ArgumentParser, report_help: str) -> None:
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
    parser.add_argument("--report", default=None, metavar="FILE.html",
                        help=report_help)
    nodes = parser.add_argument_group("multi-node (as torchrun; node 0 collects every node's records)")
    nodes.add_argument("--nnodes", default=None, metavar="N|MIN:MAX", help="nodes of the job (default 1)")
    nodes.add_argument("--node-rank", "--node_rank", type=int, default=None, metavar="K",
                       help="this node's rank; node 0 prints the report (default 0)")
    nodes.add_argument("--rdzv-backend", "--rdzv_backend", default=None, metavar="BACKEND",
                       help="torchrun's rendezvous backend (default c10d)")
    nodes.add_argument("--rdzv-endpoint", "--rdzv_endpoint", default=None, metavar="HOST[:PORT]",
                       help="the rendezvous host (node 0's) and port (default port 29400)")
    nodes.add_argument("--rdzv-id", "--rdzv_id", default=None, metavar="ID", help="the job's rendezvous id")
    nodes.add_argument("--max-restarts", "--max_restarts", type=int, default=None, metavar="N",
                       help="torchrun's worker group restarts (default 0)")
    nodes.add_argument("--report-port", type=int, default=None, metavar="PORT",
                       help="node 0's port for the other nodes' records (default: rendezvous port + 1)")
    nodes.add_argument("--slurm", dest="slurm", action="store_true", default=None,
                       help="read the nodes from the SLURM job (srun, one task per node); automatic under "
                            "srun across several nodes when no node option is given")
    nodes.add_argument("--no-slurm", dest="slurm", action="store_false", help="never read SLURM's environment")
    parser.add_argument("script", metavar="SCRIPT")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARGS")


def _run_parser() -> _Parser:
    parser = _Parser(prog="ddp-lint run",
                     description="Run a training script under torchrun with the ddp-lint monitor in every rank.")
    parser.add_argument("--quiet", action="store_true", help="do not copy the script's output to stderr")
    _add_launch_options(parser, "also write a self-contained HTML report (no network, no JavaScript, prints "
                                "well): per rank the loss and the parameter change per step, the ranks' "
                                "divergence, the findings with their source lines and the command to reproduce; "
                                "records every step as verify does (slower); on node 0 of a multi-node job")
    return parser


def _verify_parser() -> _Parser:
    parser = _Parser(prog="ddp-lint verify",
                     description="Fix a copy of the script, run both under the monitor, compare.",
                     epilog="exit codes: 0 the fixed script (or the original, if nothing needed fixing) runs clean; "
                            "1 otherwise; 2 usage; 3 a node never reported; 4 not verified: the script has "
                            "findings but no fix was applied; 130 interrupted.")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed set in both runs before the script starts (default 0)")
    parser.add_argument("--show-output", action="store_true", help="copy both scripts' output to stderr")
    _add_launch_options(parser, "also write a self-contained HTML report (no network, no JavaScript, prints "
                                "well): per rank the loss and the parameter change per step of the original and "
                                "the fixed run overlaid, the ranks' divergence, the findings with their source "
                                "lines, the fix's diff, the verdict and the command to reproduce; on node 0 of a "
                                "multi-node job")
    return parser


_NODE_OPTIONS = ("nnodes", "node_rank", "rdzv_backend", "rdzv_endpoint", "rdzv_id")


def node_launch(args: argparse.Namespace, environ: Optional[Any] = None) -> Optional[NodeLaunch]:
    """The multi-node launch the options (or the SLURM job) ask for; None for one machine."""
    environ = os.environ if environ is None else environ
    explicit = any(getattr(args, name) is not None for name in _NODE_OPTIONS)
    if args.slurm or (args.slurm is None and not explicit and slurm_step_detected(environ)):
        if args.nnodes is not None or args.node_rank is not None:
            raise NodeOptionError("--slurm reads the node count and rank from SLURM; drop --nnodes/--node-rank")
        launch = from_slurm(environ, args.rdzv_endpoint, args.rdzv_backend or "c10d", args.max_restarts or 0,
                            args.report_port)
        return launch if launch.max_nodes > 1 else None
    if not explicit:
        return None
    low, high = parse_nnodes(args.nnodes or "1")
    if high == 1:
        if args.node_rank not in (None, 0):
            raise NodeOptionError("--node-rank needs --nnodes above 1")
        return None
    node_rank = args.node_rank if args.node_rank is not None else 0
    if not 0 <= node_rank < high:
        raise NodeOptionError(f"--node-rank {node_rank} is outside 0..{high - 1} (--nnodes {args.nnodes})")
    if args.rdzv_endpoint is None:
        raise NodeOptionError("--nnodes above 1 needs --rdzv-endpoint HOST[:PORT] (node 0's host)")
    host, port = split_endpoint(args.rdzv_endpoint)
    return NodeLaunch(nnodes=args.nnodes, node_rank=node_rank, rdzv_backend=args.rdzv_backend or "c10d",
                      rdzv_endpoint=f"{host}:{port}", rdzv_id=args.rdzv_id or "ddp-lint",
                      max_restarts=args.max_restarts or 0, report_port=args.report_port)


def _parse(parser: _Parser, argv: List[str]) -> argparse.Namespace:
    args = parser.parse_args(argv)
    if args.nproc > 1 and args.launcher == "direct":
        parser.error("--launcher direct starts one process; use torchrun for --nproc-per-node > 1")
    try:
        args.nodes = node_launch(args)
    except NodeOptionError as exc:
        parser.error(str(exc))
    if args.nodes is not None and args.launcher == "direct":
        parser.error("--launcher direct starts one process; a multi-node job runs through torchrun")
    if not os.path.isfile(args.script):
        parser.error(f"no such script: {args.script}")
    if args.report is not None:
        folder = os.path.dirname(os.path.abspath(args.report))
        if not os.path.isdir(folder):
            parser.error(f"--report: no such folder: {folder}")
        if os.path.isdir(args.report):
            parser.error(f"--report: {args.report} is a folder; give a file name (report.html)")
    return args


def _reproduce(command: str, argv: List[str]) -> str:
    """The command line that reproduces this run, as the page shows it."""
    import shlex

    return " ".join(["ddp-lint", command, *(shlex.quote(a) for a in argv)])


def _write_report(command: str, path: str, text: str) -> bool:
    from .page import write_page

    try:
        write_page(path, text)
    except OSError as exc:
        print(f"ddp-lint {command}: error: cannot write the report {path}: {exc}", file=sys.stderr)
        return False
    print(f"ddp-lint {command}: report written to {path}", file=sys.stderr)
    return True


def _run_page(args: argparse.Namespace, argv: List[str], report: Any) -> bool:
    """`run --report`: the page, with the script's static findings when the static engine can give them."""
    from .page import run_page
    from .verify import VerifyUnavailable, static_findings

    notes: List[str] = []
    try:
        static = static_findings(os.path.abspath(args.script))
    except VerifyUnavailable as exc:
        static = None
        notes.append(f"no static findings: {str(exc).splitlines()[0]}")
    return _write_report("run", args.report, run_page(report, static, _reproduce("run", argv), notes))


def _spec(args: argparse.Namespace, echo: Optional[object], trace: bool, seed: Optional[int]) -> "object":
    from .launcher import LaunchSpec

    config = MonitorConfig(check_every=args.check_every, max_steps=args.max_steps, trace=trace, seed=seed,
                           backend=args.backend)
    return LaunchSpec(script=os.path.abspath(args.script), script_args=list(args.script_args), nproc=args.nproc,
                      launcher=args.launcher, timeout=args.timeout, config=config, echo=echo,  # type: ignore[arg-type]
                      nodes=args.nodes)


def _interrupt_on_sigterm() -> None:
    """SIGTERM (scancel, a node's job being stopped) ends the run as Ctrl-C does: every process stopped."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (an embedding caller): keep its handlers
        pass


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
    # The report's charts need the per-step records that only trace mode writes.
    spec = _spec(args, None if args.quiet else sys.stderr, trace=args.report is not None, seed=None)
    _interrupt_on_sigterm()
    if args.nodes is not None:
        return _run_node(args, spec, argv)
    try:
        result = launch(spec)  # type: ignore[arg-type]
    except KeyboardInterrupt:  # the launcher has already stopped every process of the run
        print("ddp-lint run: interrupted", file=sys.stderr)
        return 130
    report = build_report(args.script, args.nproc, result, args.timeout)
    sys.stdout.write(render_json(report) if args.output_format == "json" else render_text(report))
    if args.report is not None and not _run_page(args, argv, report):
        return 2
    return exit_status(report)


def _run_node(args: argparse.Namespace, spec: Any, argv: List[str]) -> int:
    """One node of a multi-node run: node 0 prints the whole job's report, the others one line."""
    import json

    from .job import finish, run_node
    from .report import INCOMPLETE_EXIT_CODE, build_report, exit_status, render_json, render_text

    nodes: NodeLaunch = args.nodes
    try:
        outcome = run_node(spec)
    except KeyboardInterrupt:
        print("ddp-lint run: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # node 0's report port is taken, say
        print(f"ddp-lint run: error: node 0 cannot collect reports on port {nodes.collector_port}: {exc}",
              file=sys.stderr)
        return 2
    if nodes.node_rank == 0:
        world = sum(len(n.ranks) for n in outcome.nodes if not n.missing)
        world = max(world, args.nproc * len(outcome.nodes))
        report = build_report(args.script, world, outcome.result, args.timeout, nodes=outcome.nodes)
        sys.stdout.write(render_json(report) if args.output_format == "json" else render_text(report))
        code = exit_status(report)
        if args.report is not None and not _run_page(args, argv, report):
            code = 2
        finish(outcome, code)
        return code
    ranks = sorted(outcome.result.records)
    if outcome.reply is None:
        # Node 0 never answered: this node's own ranks' report, so their findings are not lost.
        report = build_report(args.script, args.nproc, outcome.result, args.timeout)
        sys.stdout.write(render_json(report) if args.output_format == "json" else render_text(report))
        print(f"ddp-lint run: node {nodes.node_rank}: node 0 ({outcome.report_at}) could not be reached; "
              f"the report above holds this node's ranks only", file=sys.stderr)
        return INCOMPLETE_EXIT_CODE
    code = int(outcome.reply.get("exit_code", 1))  # type: ignore[call-overload]
    where = f"node 0 ({outcome.reply.get('host') or nodes.host})"
    if args.output_format == "json":
        print(json.dumps({"node": nodes.node_rank, "ranks": ranks, "report_on": where, "exit_code": code}))
    else:
        print(f"ddp-lint run: node {nodes.node_rank} sent ranks {', '.join(map(str, ranks)) or '(none)'} to "
              f"{where}, which prints the report; job exit code {code}")
    return code


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
    _interrupt_on_sigterm()
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
    if args.nodes is not None:
        return _verify_node(args, result, argv)
    sys.stdout.write(render_json(result) if args.output_format == "json" else render_text(result))
    if args.report is not None and not _verify_page(args, argv, result):
        return 2
    return result.exit_code


def _verify_page(args: argparse.Namespace, argv: List[str], result: Any) -> bool:
    from .page import verify_page

    return _write_report("verify", args.report, verify_page(result, _reproduce("verify", argv)))


def _verify_node(args: argparse.Namespace, result: Any, argv: List[str]) -> int:
    """One node of a multi-node verify: node 0 prints the comparison of both sides' whole-job reports and
    sends its exit code to the other nodes, which print one line."""
    import json

    from .job import finish
    from .report import INCOMPLETE_EXIT_CODE
    from .verify import render_json, render_text

    nodes: NodeLaunch = args.nodes
    if nodes.node_rank == 0:
        sys.stdout.write(render_json(result) if args.output_format == "json" else render_text(result))
        sides = [s for s in (result.original, result.fixed) if s is not None]
        code = INCOMPLETE_EXIT_CODE if any(s.report.missing_nodes for s in sides) else result.exit_code
        if args.report is not None and not _verify_page(args, argv, result):
            code = 2
        for outcome in result.outcomes:
            finish(outcome, code)
        return code
    replies = [o.reply for o in result.outcomes]
    if not replies or any(reply is None for reply in replies):
        print(f"ddp-lint verify: node {nodes.node_rank}: node 0 ({nodes.host}) could not be reached",
              file=sys.stderr)
        return INCOMPLETE_EXIT_CODE
    code = int(replies[0].get("exit_code", 1))  # type: ignore[union-attr]
    where = f"node 0 ({replies[0].get('host') or nodes.host})"  # type: ignore[union-attr]
    if args.output_format == "json":
        print(json.dumps({"node": nodes.node_rank, "report_on": where, "exit_code": code}))
    else:
        print(f"ddp-lint verify: node {nodes.node_rank} sent its ranks' records to {where}, which prints the "
              f"verdict; exit code {code}")
    return code
