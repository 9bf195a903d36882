"""The flake8 plugin (`DDP` codes): the CLI's findings, at the CLI's positions, inside a flake8 run.

flake8 owns selection (`--select`, `--extend-ignore`, `--per-file-ignores`) and `# noqa` (the plugin
asks the pipeline for its findings without applying `# noqa`, so `--disable-noqa` works as flake8
users expect); the plugin adds what flake8 cannot know: the configuration that governs each checked
file, found by the CLI's own resolver (its extra optimizer factories, placements and wrappers, its
selection and per-file ignores). A finding's text is its concise line (`optimizer `opt` built before
`model.cuda()` (line 12)`), as ruff's flake8-style output.

Which rules run: those flake8 would report (its own decision, asked once per run) that are also on
in ddp-lint's selection. flake8 turns every plugin code on by default, which would make the
info-level DDP201 appear on a plain `flake8` run while the CLI keeps it off; so a rule that the CLI
leaves off by default runs only when flake8's `--select`/`--extend-select` names it more precisely
than the bare `DDP` prefix (`--extend-select DDP201` or `DDP2`).

Cost for everyone else: this module imports nothing heavy. A file is joined into text and passed
to the prefilter, which also reads the stdlib tree flake8 has already built; only a file that can
match is parsed with LibCST. A run whose selection
leaves out every DDP code does no work per file at all.
"""
from __future__ import annotations

import argparse
import os
from typing import Any, ClassVar, Dict, Iterator, Optional, Sequence, Tuple

from .. import __version__

_PREFIX = "DDP"

Result = Tuple[int, int, str, type]


class Plugin:
    """flake8 `tree` checker: flake8's stdlib tree decides whether a file can match; the engine then
    reads the source with LibCST."""

    name = "ddp-lint"
    version = __version__

    # Set once per run by `parse_options`; None means "not configured by flake8" (direct use).
    _flake8_codes: ClassVar[Optional[Tuple[str, ...]]] = None
    _explicit: ClassVar[Tuple[str, ...]] = ()

    def __init__(self, tree: Any, filename: str, lines: Sequence[str]) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        """Record which DDP codes this flake8 run reports, by flake8's own select/ignore decision."""
        from flake8.style_guide import Decision, DecisionEngine

        from ..rules import rule_codes

        decider = DecisionEngine(options)
        cls._flake8_codes = tuple(code for code in rule_codes() if decider.decision_for(code) is Decision.Selected)
        named = [*(options.select or ()), *(options.extend_select or ())]
        cls._explicit = tuple(p.upper() for p in named if p.upper().startswith(_PREFIX) and len(p) > len(_PREFIX))

    def run(self) -> Iterator[Result]:
        if self._flake8_codes is not None and not self._flake8_codes:
            return  # nothing of ours is selected: do not even look at the file
        from ..config import ConfigError

        try:
            settings, root = _settings_for(self.filename, self._flake8_codes, self._explicit)
        except ConfigError as exc:
            # flake8's way to stop a run with one message (no traceback), as the CLI exits 2 on it;
            # carrying on with defaults would silently drop the team's extra factories and wrappers
            from flake8.exceptions import ExecutionError

            raise ExecutionError(f"ddp-lint: configuration error: {exc}") from None
        if settings is None:
            return
        from ..prefilter import project_could_match, settings_could_match
        from ..pipeline import project_index

        text = "".join(self.lines)
        # The same project index as the CLI's, built in this worker: calls into the project's other
        # modules are followed, so flake8 and the CLI report the same findings.
        project = project_index(settings, root)
        if not settings_could_match(text, settings, tree=self.tree) and not (
            project is not None and project_could_match(text, self.filename, settings, project)
        ):
            return
        # Only now the parser: importing LibCST adds enough objects to a flake8 worker's heap that
        # every later garbage collection of the run gets slower.
        from ..documents.python import InputError, PythonDocument, SourceText
        from ..pipeline import check

        document = PythonDocument(self.filename, SourceText(text, "utf-8", False, b""))
        try:
            findings = check(document, settings, project, noqa=False, prefilter=False)
        except (InputError, RecursionError):
            return  # flake8 reports the syntax error itself (E999)
        for finding in findings:
            # the CLI's columns are 1-based; flake8 wants a 0-based offset and prints it plus one
            yield finding.line, finding.column - 1, f"{finding.code} {finding.summary}", type(self)


def _settings_for(filename: str, flake8_codes: Optional[Tuple[str, ...]], explicit: Tuple[str, ...]):
    """The CLI's settings for this file (governing configuration, per-file ignores) narrowed to
    flake8's selection."""
    path = filename if filename not in ("stdin", "-") else os.path.join(os.getcwd(), "stdin.py")
    resolved = _resolver().for_path(path)
    base = resolved.settings
    settings = _narrowed(base, flake8_codes, explicit)
    return settings, resolved.root


_RESOLVERS: Dict[str, Any] = {}


def _resolver():
    """One resolver per working folder for the run (flake8 runs from one folder; tests change it)."""
    cwd = os.getcwd()
    resolver = _RESOLVERS.get(cwd)
    if resolver is None:
        from ..workspace.configs import Resolver

        resolver = _RESOLVERS[cwd] = Resolver(cwd=cwd)
    return resolver


_NARROWED: Dict[Tuple[int, Optional[Tuple[str, ...]], Tuple[str, ...]], Tuple[Any, Any]] = {}


def _narrowed(base, flake8_codes: Optional[Tuple[str, ...]], explicit: Tuple[str, ...]):
    """ddp-lint's selection for this run, or None when no rule is left (Settings holds a dict: keyed by id)."""
    key = (id(base), flake8_codes, explicit)
    cached = _NARROWED.get(key)
    if cached is not None and cached[0] is base:
        return cached[1]
    from dataclasses import replace

    from ..rules import rule_codes
    from ..settings import Selection

    # A precise flake8 selection acts like ddp-lint's --extend-select: it can turn DDP201 on, and a
    # more specific ignore in [tool.ddp-lint] still wins over it.
    own = replace(base.selection, extend_select=base.selection.extend_select + explicit)
    candidates = rule_codes() if flake8_codes is None else flake8_codes
    codes = tuple(code for code in candidates if own.enabled(code))
    settings = replace(base, selection=Selection(select=codes)) if codes else None
    _NARROWED[key] = (base, settings)
    return settings
