"""The `ddp-lint` command: check (default), --fix/--diff, rule docs, and the runtime subcommands.

Exit codes: 0 clean, 1 findings (or fixes with --exit-non-zero-on-fix), 2 usage, configuration or
input errors (other files are still checked).
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from typing import Iterable, List, Optional, Sequence, Tuple

from . import __version__
from .config import ConfigError, find_config, load_config
from .discovery import discover
from .report import github, json_format, text
from .report.model import RunResult
from .rules import RULES, all_rules, documentation
from .runner import CHECK, DIFF, FIX, FileReport, process, strip_for_transfer
from .settings import Selection, Settings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SUBCOMMANDS = ("check", "rule", "rules", "run", "verify")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, never a usage dump
        raise UsageError(message)


def _codes(values: Optional[List[str]]) -> Optional[Tuple[str, ...]]:
    if values is None:
        return None
    codes = tuple(code.strip().upper() for value in values for code in value.split(",") if code.strip())
    for code in codes:
        if code != "ALL" and not code.startswith("DDP"):
            raise UsageError(f"unknown rule selector {code!r} (codes look like DDP101, prefixes like DDP1, or ALL)")
    return codes


def _jobs(value: str) -> int:
    if value == "auto":
        # the CPUs this process may run on (a container or `taskset` can allow fewer than the machine has)
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        jobs = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or auto, got {value!r}") from None
    if jobs < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return jobs


def _check_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ddp-lint check", add_help=True)
    parser.add_argument("paths", nargs="*", default=None)
    parser.add_argument("--select", action="append")
    parser.add_argument("--ignore", action="append")
    parser.add_argument("--extend-select", action="append")
    parser.add_argument("--exclude", action="append", default=[])
    parser.add_argument("--output-format", choices=("text", "json", "sarif", "github"), default="text")
    parser.add_argument("--exit-zero", action="store_true")
    parser.add_argument("--fix", action="store_true")
    parser.add_argument("--diff", action="store_true")
    parser.add_argument("--unsafe-fixes", action="store_true")
    parser.add_argument("--exit-non-zero-on-fix", action="store_true")
    parser.add_argument("-j", "--jobs", type=_jobs, default="auto", help="processes: a number, or auto (one per CPU)")
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--config", default=None, help="pyproject.toml to read instead of searching")
    parser.add_argument("--isolated", action="store_true", help="ignore configuration files")
    parser.add_argument("--no-project", action="store_true",
                        help="check each file alone, not following calls into the project's other modules")
    parser.add_argument("--stdin-filename", default=None)
    parser.add_argument("--show-source", dest="show_source", action="store_true", default=None)
    parser.add_argument("--no-show-source", dest="show_source", action="store_false")
    parser.add_argument("--version", action="version", version=f"ddp-lint {__version__}")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(argv)
    except UsageError as exc:
        print(f"ddp-lint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except ConfigError as exc:
        print(f"ddp-lint: configuration error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("ddp-lint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN


def _dispatch(argv: List[str]) -> int:
    command = argv[0] if argv and argv[0] in SUBCOMMANDS else "check"
    rest = argv[1:] if argv and argv[0] in SUBCOMMANDS else argv
    if command == "rules":
        for rule in all_rules():
            print(f"{rule.code}  {rule.severity:<7}  {rule.name}")
        return EXIT_CLEAN
    if command == "rule":
        if len(rest) != 1:
            raise UsageError("usage: ddp-lint rule CODE")
        code = rest[0].upper()
        if code not in RULES:
            raise UsageError(f"no rule {rest[0]!r}; `ddp-lint rules` lists them")
        print(documentation(code).rstrip())
        return EXIT_CLEAN
    if command in ("run", "verify"):
        try:
            from .runtime import cli as runtime_cli
        except ImportError as exc:
            raise UsageError(f"the runtime companion is unavailable: {exc}") from None
        return (runtime_cli.run_main if command == "run" else runtime_cli.verify_main)(rest)
    return check(_check_parser().parse_args(rest))


def _settings(args: argparse.Namespace, paths: Iterable[str]) -> Tuple[Settings, str]:
    settings, root = Settings(), os.getcwd()
    if not args.isolated:
        path = args.config or find_config([p for p in paths if p != "-"] or ["."])
        if args.config and not os.path.isfile(args.config):
            raise ConfigError(f"{args.config}: no such file")
        if path:
            settings, root = load_config(path)
    selection = settings.selection
    select = _codes(args.select)
    selection = Selection(
        select=select if select is not None else selection.select,
        ignore=selection.ignore + (_codes(args.ignore) or ()),
        extend_select=selection.extend_select + (_codes(args.extend_select) or ()),
    )
    settings = replace(settings, selection=selection, exclude=settings.exclude + tuple(args.exclude))
    if args.no_project:
        settings = replace(settings, project=False)
    return settings, root


def check(args: argparse.Namespace) -> int:
    from .project.index import forget

    forget()  # summaries of other modules are this run's, read from the files as they are now
    paths = args.paths or ["."]
    settings, root = _settings(args, paths)
    mode = DIFF if args.diff else FIX if args.fix else CHECK
    result = RunResult(mode=mode, unsafe_fixes=args.unsafe_fixes)
    files, missing = discover(paths, settings.exclude)
    result.errors.extend(missing)
    reports = _run(files, settings, mode, args, root)
    outputs = []
    for report in reports:
        result.files += 1
        if report.error:
            result.errors.append((report.path, report.error))
        result.findings.extend(report.findings)
        result.fixed += report.fixed
        if report.diff:
            outputs.append(report.diff)
        if report.from_stdin and mode == FIX and report.output is not None:
            outputs.append(report.output)
    result.findings.sort(key=lambda f: f.sort_key())
    result.errors.sort()
    _print(result, args, outputs, mode)
    if result.errors:
        return EXIT_ERROR
    if args.exit_non_zero_on_fix and result.fixed:
        return EXIT_FINDINGS
    if mode == DIFF:
        return EXIT_FINDINGS if result.fixed and not args.exit_zero else EXIT_CLEAN
    return EXIT_FINDINGS if result.findings and not args.exit_zero else EXIT_CLEAN


def _run(files: List[str], settings: Settings, mode: str, args: argparse.Namespace, root: str) -> List[FileReport]:
    from .cache import Cache

    cache = None if args.no_cache or mode != CHECK else Cache.open(args.cache_dir, settings)
    reports: List[FileReport] = []
    todo: List[str] = []
    for path in files:
        if path == "-":
            raw = sys.stdin.buffer.read()
            display = args.stdin_filename or "-"
            report = process(display, settings, mode, args.unsafe_fixes, raw=raw, root=root)
            report.from_stdin = True
            reports.append(report)
            continue
        cached = cache.get(path) if cache is not None else None
        if cached is not None:
            reports.append(cached)
        else:
            todo.append(path)
    job = (settings, mode, args.unsafe_fixes, root)
    if args.jobs > 1 and len(todo) > 1:
        from .parallel import check_in_processes

        todo.sort(key=_size, reverse=True)  # largest first: a few huge files must not queue behind each other
        fresh = check_in_processes(todo, _work, job, min(args.jobs, len(todo)))
    else:
        fresh = [_work(path, job) for path in todo]
    if cache is not None:
        for report in fresh:
            cache.put(report)
        cache.flush()
    return reports + fresh


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _work(path: str, job: tuple) -> FileReport:
    settings, mode, unsafe, root = job
    try:
        report = process(path, settings, mode, unsafe, root=root)
    except Exception as exc:  # a bug in ddp-lint costs this file, not the run's other results
        return FileReport(path, error=f"internal error: {type(exc).__name__}: {exc} (please report it)")
    return strip_for_transfer(report)


def _print(result: RunResult, args: argparse.Namespace, outputs: List[str], mode: str) -> None:
    stdout = sys.stdout
    for output in outputs:
        stdout.write(output)
    report_stream = sys.stderr if outputs and mode == FIX else stdout
    if args.output_format == "json":
        print(json_format.render(result), file=report_stream)
    elif args.output_format == "sarif":
        from .report import sarif  # loads every rule's documentation

        print(sarif.render(result), file=report_stream)
    elif args.output_format == "github":
        rendered = github.render(result)
        if rendered:
            print(rendered, file=report_stream)
    else:
        show = args.show_source if args.show_source is not None else report_stream.isatty()
        sources = _sources(result) if show else None
        rendered = text.render(result, show, sources, dry_run=mode == DIFF)
        if rendered:
            print(rendered, file=report_stream)


def _sources(result: RunResult):
    sources = {}
    for finding in result.findings:
        if finding.path not in sources and os.path.isfile(finding.path):
            try:
                with open(finding.path, encoding="utf-8", errors="replace") as handle:
                    sources[finding.path] = handle.read().splitlines()
            except OSError:
                pass
    return sources


if __name__ == "__main__":
    sys.exit(main())
