"""The `ddp-lint` command: check (default), --fix/--diff, --add-noqa, --watch, rule docs, and the
runtime subcommands.

Exit codes: 0 clean, 1 findings (or fixes with --exit-non-zero-on-fix), 2 usage, configuration or
input errors (other files are still checked), 130 interrupted; `--add-noqa` exits 0 unless an error,
and `--watch` exits 0 when Ctrl-C ends it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from . import __version__
from .config import ConfigError
from .findings import Mode, shown_in_run
from .pipeline import FileReport, placements_reported_in, process, project_index
from .report import ALIASES, FORMATS, TEXT_FORMATS, github, gitlab, json_format, junit, pylint, text
from .report.model import RunResult
from .rules import RULES, all_rules, documentation
from .settings import selector_problem
from .workspace.configs import Overrides, Resolver, config_arguments
from .workspace.files import Discovery

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SUBCOMMANDS = ("check", "rule", "rules", "run", "verify", "server")
OUTPUT_FORMATS = (*FORMATS, *ALIASES)

DESCRIPTION = """\
Find PyTorch optimizers built before their model is moved, cast, replaced or wrapped.

commands:
  ddp-lint [check] [PATHS...]   check .py and .ipynb files (the default command; see the options below)
  ddp-lint rules [--output-format text|json]   list the rules
  ddp-lint rule CODE            a rule's documentation
  ddp-lint run SCRIPT [ARGS]    run a training script with the runtime monitor in every rank (needs torch)
  ddp-lint verify SCRIPT [ARGS] run a script and its fixed copy, and compare them (needs torch)
  ddp-lint server               a language server for editors, over stdio (needs pygls: pip install pygls)
"""
EPILOG = """\
exit codes: 0 no findings; 1 findings (or fixes, with --exit-non-zero-on-fix); 2 usage, configuration or
input errors (the other files are still checked); 130 interrupted. --add-noqa exits 0 (2 on an error);
--watch runs until Ctrl-C and then exits 0.
"""


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, never a usage dump
        raise UsageError(message)


def _codes(values: Optional[List[str]], option: str) -> Optional[Tuple[str, ...]]:
    """Comma-separated selectors, each naming a rule or a prefix of one (a typo is an error, not a
    silent no-op that turns the linter off)."""
    if values is None:
        return None
    codes = []
    for value in values:
        for code in value.split(","):
            code = code.strip()
            problem = selector_problem(code)
            if problem is not None:
                raise UsageError(f"{option}: {problem}")
            codes.append(code)
    return tuple(codes)


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
    parser = _Parser(prog="ddp-lint", description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", default=None, metavar="PATH",
                        help="files or folders to check (default: .); - reads stdin")
    rules = parser.add_argument_group("rule selection (codes like DDP101, prefixes like DDP1, or ALL)")
    rules.add_argument("--select", action="append", metavar="CODES", help="the rules to run, comma separated")
    rules.add_argument("--ignore", action="append", metavar="CODES", help="rules to leave out")
    rules.add_argument("--extend-select", action="append", metavar="CODES", help="rules to add to the selection")
    rules.add_argument("--extend-ignore", action="append", metavar="CODES",
                       help="rules to leave out too (as ruff's; the same as --ignore here)")
    rules.add_argument("--ignore-noqa", action="store_true", help="report (and fix) what `# noqa` comments silence")
    files = parser.add_argument_group("file selection")
    files.add_argument("--exclude", action="append", metavar="GLOB",
                       help="exclude these (.gitignore-style globs), instead of the defaults (build, dist, .venv, ...)")
    files.add_argument("--extend-exclude", action="append", metavar="GLOB", help="exclude these too")
    files.add_argument("--force-exclude", dest="force_exclude", action="store_true", default=None,
                       help="apply the exclusions to files named on the command line too (as pre-commit needs)")
    files.add_argument("--no-force-exclude", dest="force_exclude", action="store_false",
                       help="check files named on the command line even when excluded (the default)")
    files.add_argument("--respect-gitignore", dest="respect_gitignore", action="store_true", default=None,
                       help="skip files that .gitignore ignores (the default)")
    files.add_argument("--no-respect-gitignore", dest="respect_gitignore", action="store_false",
                       help="check files that .gitignore ignores too")
    files.add_argument("--stdin-filename", default=None, metavar="PATH",
                       help="the path stdin stands for (configuration, per-file ignores, output); with no PATH, reads stdin")
    output = parser.add_argument_group("output")
    output.add_argument("--output-format", choices=OUTPUT_FORMATS, default="full", metavar="FORMAT",
                        help="; ".join(f"{name}: {what}" for name, what in FORMATS.items())
                        + "".join(f"; {alias} is {name}" for alias, name in ALIASES.items()))
    output.add_argument("--show-source", dest="show_source", action="store_true", default=None,
                        help="show the source lines (default: on a terminal)")
    output.add_argument("--no-show-source", dest="show_source", action="store_false",
                        help="never show the source lines")
    output.add_argument("--statistics", action="store_true", help="count the findings by rule instead of listing them")
    output.add_argument("--show-fixes", dest="show_fixes", action="store_true", default=False,
                        help="after the findings, the fixes made (--fix), that would be made (--diff) or that --fix "
                             "would make, by file and rule (text formats)")
    output.add_argument("--no-show-fixes", dest="show_fixes", action="store_false", help="do not (the default)")
    output.add_argument("-q", "--quiet", action="store_true", help="print the findings and nothing else")
    output.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    fixing = parser.add_argument_group("fixing")
    fixing.add_argument("--fix", action="store_true", help="apply the safe fixes")
    fixing.add_argument("--diff", action="store_true", help="show the fixes as a diff, change nothing")
    fixing.add_argument("--unsafe-fixes", action="store_true", help="apply (or show) the unsafe fixes too")
    fixing.add_argument("--exit-non-zero-on-fix", action="store_true", help="exit 1 when a file was fixed")
    fixing.add_argument("--add-noqa", action="store_true",
                        help="add `# noqa: CODE` to every line with a finding (into an existing `# noqa:` list) and "
                             "say how many were added; exits 0")
    run = parser.add_argument_group("run")
    run.add_argument("-j", "--jobs", type=_jobs, default="auto", metavar="N|auto",
                     help="processes: a number, or auto (one per usable CPU)")
    run.add_argument("--no-cache", action="store_true", help="neither read nor write the results cache")
    run.add_argument("--cache-dir", default=None, metavar="DIR", help="the results cache's folder (default .ddp_lint_cache)")
    run.add_argument("--config", action="append", metavar="FILE|KEY=VALUE",
                     help="a configuration file for every file (pyproject.toml or ddp-lint.toml), instead of searching; "
                          "or a setting laid over the configuration, in TOML: --config \"extend-select = ['DDP201']\" "
                          "(repeatable)")
    run.add_argument("--isolated", action="store_true", help="read no configuration file")
    run.add_argument("--no-project", action="store_true",
                     help="check each file alone, not following calls into the project's other modules")
    run.add_argument("-w", "--watch", action="store_true",
                     help="check again whenever a checked file or configuration changes, until Ctrl-C (needs watchfiles)")
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
        return _rules(rest)
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
    if command == "server":
        try:
            from .frontends import language_server
        except ImportError as exc:
            if (exc.name or "").split(".")[0] not in ("pygls", "lsprotocol", "cattrs"):
                raise
            raise UsageError("the language server needs pygls, which is not installed: pip install pygls") from None
        return language_server.main(rest)
    return check(_check_parser().parse_args(rest))


def _rules(argv: List[str]) -> int:
    parser = _Parser(prog="ddp-lint rules", description="List the rules.")
    parser.add_argument("--output-format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    from .rules.table import DEFAULT_SELECT

    rules = all_rules()
    if args.output_format == "json":
        from .settings import Selection

        default = Selection(select=DEFAULT_SELECT)
        print(json.dumps([
            {"code": rule.code, "name": rule.name, "severity": rule.severity, "default": default.enabled(rule.code),
             "summary": documentation(rule.code).splitlines()[0], "documentation": documentation(rule.code)}
            for rule in rules
        ], indent=2))
    else:
        for rule in rules:
            print(f"{rule.code}  {rule.severity:<7}  {rule.name}")
    return EXIT_CLEAN


def _overrides(args: argparse.Namespace, table: Optional[dict] = None) -> Overrides:
    exclude = tuple(g for v in args.exclude for g in v.split(",") if g.strip()) if args.exclude else None
    return Overrides(
        select=_codes(args.select, "--select"),
        ignore=(_codes(args.ignore, "--ignore") or ()) + (_codes(args.extend_ignore, "--extend-ignore") or ()),
        extend_select=_codes(args.extend_select, "--extend-select") or (),
        exclude=exclude,
        extend_exclude=tuple(g for v in (args.extend_exclude or ()) for g in v.split(",") if g.strip()),
        force_exclude=args.force_exclude,
        respect_gitignore=args.respect_gitignore,
        project=False if args.no_project else None,
        ignore_noqa=True if args.ignore_noqa else None,
        table=table,
    )


def _refuse_conflicts(args: argparse.Namespace) -> None:
    """Options that cannot go together, refused by name (as ruff refuses them)."""
    modes = [name for name, given in (("--fix", args.fix), ("--diff", args.diff), ("--add-noqa", args.add_noqa)) if given]
    if args.add_noqa and len(modes) > 1:
        raise UsageError(f"--add-noqa cannot be used with {modes[0] if modes[0] != '--add-noqa' else modes[1]}")
    if args.add_noqa and args.ignore_noqa:
        raise UsageError("--add-noqa cannot be used with --ignore-noqa")
    stdin = args.stdin_filename is not None or "-" in (args.paths or ())
    if args.add_noqa and stdin:
        raise UsageError("--add-noqa changes files; it cannot read stdin")
    if args.watch and (args.fix or args.diff or args.add_noqa):
        raise UsageError(f"--watch cannot be used with {modes[0]}")
    if args.watch and stdin:
        raise UsageError("--watch watches files; it cannot read stdin")


def check(args: argparse.Namespace) -> int:
    _refuse_conflicts(args)
    if args.watch:
        try:
            from .watch import watch
        except ImportError as exc:
            if (exc.name or "").split(".")[0] != "watchfiles":
                raise
            raise UsageError("--watch needs watchfiles, which is not installed: pip install watchfiles") from None
        paths = args.paths or ["."]
        missing = [path for path in paths if not os.path.exists(path)]
        if missing:
            raise UsageError(f"--watch: no such file or folder: {missing[0]}")
        return watch(paths, lambda: _check_once(args))
    return _check_once(args)


def _check_once(args: argparse.Namespace) -> int:
    from .project.index import forget

    forget()  # summaries of other modules are this run's, read from the files as they are now
    args.output_format = ALIASES.get(args.output_format, args.output_format)
    config, table = config_arguments(args.config or ())
    resolver = Resolver(config, args.isolated, _overrides(args, table))
    paths = args.paths or ([] if args.stdin_filename else ["."])
    if args.stdin_filename and not paths:
        paths = ["-"]  # as ruff: naming stdin's file means reading stdin, never the folder
    mode = Mode.DIFF if args.diff else Mode.FIX if args.fix else Mode.ADD_NOQA if args.add_noqa else Mode.CHECK
    result = RunResult(mode=mode, unsafe_fixes=args.unsafe_fixes)
    files, errors = Discovery(resolver).files(paths)
    result.errors.extend(errors)
    if not files and not errors:
        print("ddp-lint: warning: No Python files found under the given path(s)", file=sys.stderr)
    reports = _run(files, resolver, mode, args)
    run = {os.path.abspath(report.path) for report in reports}
    reported = _placements_reported(resolver)
    outputs = []
    for report in reports:
        report.findings = shown_in_run(report.findings, run, reported)
        result.files += 1
        result.checked.append(report.path)
        if report.error:
            result.errors.append((report.path, report.error))
        result.findings.extend(report.findings)
        result.fixed += report.fixed
        result.noqa_added += report.noqa_added
        if report.fixed_codes:
            result.fixed_by_file[report.path] = report.fixed_codes
        if report.diff:
            outputs.append(report.diff)
        if report.from_stdin and mode == Mode.FIX and report.output is not None:
            outputs.append(report.output)
    result.findings.sort(key=lambda f: f.sort_key())
    result.errors.sort()
    result.checked.sort()
    if mode == Mode.ADD_NOQA:
        return _noqa_added(result, args)
    _print(result, args, outputs, mode)
    if result.errors:
        return EXIT_ERROR
    if args.exit_non_zero_on_fix and result.fixed:
        return EXIT_FINDINGS
    if mode == Mode.DIFF:
        return EXIT_FINDINGS if result.fixed and not args.exit_zero else EXIT_CLEAN
    return EXIT_FINDINGS if result.findings and not args.exit_zero else EXIT_CLEAN


def _placements_reported(resolver: Resolver):
    """What a check of another module reports, asked in this process of the modules whose pairs a
    checked caller reports without them (few: a run that checks those modules drops such reports)."""
    known: Dict[str, frozenset] = {}

    def reported(module: str) -> frozenset:
        if module not in known:
            resolved = resolver.for_path(module)
            known[module] = placements_reported_in(module, resolved.settings,
                                                   project_index(resolved.settings, resolved.root))
        return known[module]

    return reported


def _noqa_added(result: RunResult, args: argparse.Namespace) -> int:
    """`--add-noqa`'s report, as ruff's: the files it could not read, the findings it could not silence
    (a notebook's IPython line), then `Added 3 noqa directives.` on stderr."""
    for path, message in result.errors:
        print(f"{path}: error: {message}", file=sys.stderr)
    for finding in result.findings:
        where = f"{finding.path}:cell {finding.cell}:{finding.line}" if finding.cell is not None else f"{finding.path}:{finding.line}"
        print(f"{where}: warning: no place for `# noqa: {finding.code}` on this line", file=sys.stderr)
    if not args.quiet:
        count = result.noqa_added
        print(f"Added {count} noqa directive{'s' if count != 1 else ''}.", file=sys.stderr)
    return EXIT_ERROR if result.errors else EXIT_CLEAN


def _run(files: List[str], resolver: Resolver, mode: str, args: argparse.Namespace) -> List[FileReport]:
    from .cache import Cache, settings_fingerprint

    edits = args.output_format in ("json", "sarif")
    cache = None if args.no_cache or mode != Mode.CHECK else Cache.open(args.cache_dir)
    reports: List[FileReport] = []
    todo: List[str] = []
    # the run's files, for `--add-noqa` (which writes a comment only for the findings the run shows)
    run = frozenset(os.path.abspath(args.stdin_filename if path == "-" and args.stdin_filename else path)
                    for path in files) if mode == Mode.ADD_NOQA else None
    fingerprints = {}
    for path in files:
        if path == "-":
            raw = sys.stdin.buffer.read()
            display = args.stdin_filename or "-"
            resolved = resolver.for_path(display)
            if resolved.settings.force_exclude and display != "-" and Discovery(resolver).excluded_path(display):
                continue  # pre-commit style: an excluded name is not checked, not even from stdin
            reports.append(process(display, resolved.settings, resolved.root, mode, args.unsafe_fixes, raw=raw,
                                   edits=edits, run=run))
            continue
        if cache is not None:
            fingerprints[path] = settings_fingerprint(resolver.for_path(path).settings, edits)
            cached = cache.get(path, fingerprints[path])
            if cached is not None:
                reports.append(cached)
                continue
        todo.append(path)
    job = (resolver, mode, args.unsafe_fixes, edits, run)
    if args.jobs > 1 and len(todo) > 1:
        from .parallel import check_in_processes

        todo.sort(key=_size, reverse=True)  # largest first: a few huge files must not queue behind each other
        fresh = check_in_processes(todo, _work, job, min(args.jobs, len(todo)))
    else:
        fresh = [_work(path, job) for path in todo]
    if cache is not None:
        for report in fresh:
            cache.put(report, fingerprints[report.path])
        problem = cache.flush()
        if problem is not None:
            print(f"ddp-lint: warning: {problem} (results are not cached)", file=sys.stderr)
    return reports + fresh


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _work(path: str, job: tuple) -> FileReport:
    resolver, mode, unsafe, edits, run = job
    try:
        resolved = resolver.for_path(path)
        return process(path, resolved.settings, resolved.root, mode, unsafe, edits=edits, run=run)
    except ConfigError as exc:
        return FileReport(path, error=f"configuration error: {exc}")
    except Exception as exc:  # a bug in ddp-lint costs this file, not the run's other results
        return FileReport(path, error=f"internal error: {type(exc).__name__}: {exc} (please report it)")


def _print(result: RunResult, args: argparse.Namespace, outputs: List[str], mode: str) -> None:
    stdout = sys.stdout
    for output in outputs:
        stdout.write(output)
    # `--diff` prints the diff alone on stdout, so it can be piped to `git apply` (as ruff does); the
    # report of a stdin `--fix`, whose stdout is the fixed text, goes to stderr too.
    report_stream = sys.stderr if mode == Mode.DIFF or (outputs and mode == Mode.FIX) else stdout
    if args.output_format == "json":
        print(json_format.render(result), file=report_stream)
    elif args.output_format == "sarif":
        from .report import sarif  # loads every rule's documentation

        print(sarif.render(result), file=report_stream)
    elif args.output_format in TEXT_FORMATS:
        show = args.show_source if args.show_source is not None else report_stream.isatty()
        sources = _sources(result) if show and args.output_format == "full" else None
        rendered = text.render(result, show, sources, dry_run=mode == Mode.DIFF, concise=args.output_format == "concise",
                               statistics=args.statistics, quiet=args.quiet, grouped=args.output_format == "grouped",
                               show_fixes=args.show_fixes)
        if rendered:
            print(rendered, file=report_stream)
    else:
        rendered = {"github": github, "gitlab": gitlab, "junit": junit, "pylint": pylint}[args.output_format].render(result)
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
