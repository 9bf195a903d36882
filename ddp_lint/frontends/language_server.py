"""`ddp-lint server`: the findings of the files open in an editor, over the Language Server Protocol (stdio).

It publishes the CLI's findings for open `.py` buffers and notebook documents (each cell gets its own
diagnostics), offers the CLI's fixes as code actions ("move the optimizer", fix all, `# noqa`), and
reads each file's settings through the CLI's resolver, re-checking the open buffers when a
configuration file changes, and those that read a project module when that module changes.

The editor is never kept waiting: the event loop only reads messages, schedules checks and publishes;
the checks run one at a time on a worker thread (one at a time because the project index, like the
CLI's, is a per-process cache meant for one run at a time). Every open buffer (a text document or a
notebook) has a generation, bumped by every change (each new version), save and reload; a result is
published only while its generation is current, so a check that the document outran is dropped, and
one still queued for the worker is cancelled. A change is checked after `debounceMs` (150 ms by
default) without another change to the same buffer; open and save are checked at once. A code action
request waits for the buffer's current check rather than starting one of its own.

Initialization options: `unsafeFixes` (offer unsafe fixes, as `--unsafe-fixes`), `debounceMs`.
"""
from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..config import ConfigError
from ..documents import InputError, PythonDocument
from ..findings import SAFE, Finding, Mode
from ..lines import render
from ..parsing import Reparser
from ..pipeline import check, fix, project_index
from ..settings import Settings
from ..workspace.configs import CONFIG_NAMES, Resolver
from ..workspace.files import Discovery
from . import lsp_convert
from .lsp_documents import PYTHON_SUFFIXES, Cell, Snapshot, apply_line_edit, path_of, source_text

DEFAULT_DEBOUNCE_MS = 150
_FULL_COLLECTION_EVERY = 50  # publications between two full garbage collections (see DdpLintServer._tidy)
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.{lsp_convert.SOURCE}"
_WATCHERS_ID = "ddp-lint-watched-files"

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options:
    """What the client says in `initializationOptions`."""

    unsafe_fixes: bool = False
    debounce: float = DEFAULT_DEBOUNCE_MS / 1000

    @classmethod
    def read(cls, value: Any) -> "Options":
        value = value if isinstance(value, dict) else {}
        debounce = value.get("debounceMs", DEFAULT_DEBOUNCE_MS)
        if not isinstance(debounce, (int, float)) or isinstance(debounce, bool) or debounce < 0:
            debounce = DEFAULT_DEBOUNCE_MS
        return cls(unsafe_fixes=value.get("unsafeFixes") is True, debounce=debounce / 1000)


@dataclass
class Checked:
    """One buffer's check: what was checked, under which settings, and what was found."""

    generation: int
    snapshot: Snapshot
    findings: List[Finding] = field(default_factory=list)
    settings: Optional[Settings] = None  # None: not checked (a configuration error, an excluded file)
    root: str = ""
    error: Optional[str] = None  # a configuration error, for the user
    deps: FrozenSet[str] = frozenset()  # the project's other modules the check read
    edited: Optional[List[Finding]] = None  # the program's findings with their fix edits (worker, on demand)
    # The text does not parse: (message, cell, line, column) of the syntax error, shown as a diagnostic
    # beside the last findings of a text that parsed (they would flicker away at every keystroke).
    unparsable: Optional[Tuple[str, Optional[int], int, int]] = None


def _key(finding: Finding) -> tuple:
    """A finding's identity within one check of one text (the same in a check that adds edits)."""
    return finding.code, finding.cell, finding.line, finding.column


class DdpLintServer(LanguageServer):
    def __init__(self) -> None:
        # Markdown cells too: a client sends only the cells the selector names, and a finding's message
        # counts cells as the CLI does, markdown included ("line 1 of cell 3").
        notebooks = types.NotebookDocumentSyncOptions(
            notebook_selector=[types.NotebookDocumentFilterWithCells(notebook="*", cells=[
                types.NotebookCellLanguage(language="python"), types.NotebookCellLanguage(language="markdown")])],
            save=True,
        )
        super().__init__("ddp-lint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=notebooks)
        self.options = Options()
        self.root = os.getcwd()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ddp-lint-check")
        self._generation: Dict[str, int] = {}
        self._pending: Dict[str, asyncio.Task] = {}  # buffer -> its scheduled check (debounce, then worker)
        self._changed: Dict[str, float] = {}  # buffer -> the event loop's time of its last debounced change
        self._checked: Dict[str, Checked] = {}
        self._last_good: Dict[str, List[Finding]] = {}  # buffer -> the findings of its last text that parsed
        self._published: Dict[str, Set[str]] = {}  # buffer -> the URIs given diagnostics (a notebook's cells)
        self._shown: Set[str] = set()  # configuration errors already shown
        # Bumped on the event loop, read on the worker, which then starts afresh: a new resolver (it
        # caches every configuration it read) or a new project index (it caches the modules it read).
        self._config_epoch = 0
        self._files_epoch = 0
        self._resolver: Optional[tuple] = None  # (config epoch, Resolver), worker only
        self._index_epoch = 0  # worker only
        # buffer -> its Reparser (worker only; the event loop drops a closed buffer's): a keystroke
        # changes one function, and only the top-level statements whose text changed are parsed again.
        self._reparsers: Dict[str, Reparser] = {}
        self._tidied = 0  # worker only

    # ----- buffers (event loop) ---------------------------------------------------------------------

    def buffer_of(self, uri: str) -> str:
        """The buffer an editor document belongs to: its notebook for a cell, itself otherwise."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        return notebook.uri if notebook is not None else uri

    def _text_document(self, uri: str):
        return self.workspace.text_documents.get(unquote(uri))

    def is_python(self, uri: str) -> bool:
        document = self._text_document(uri)
        if document is None or self.workspace.get_notebook_document(cell_uri=uri) is not None:
            return False
        return document.language_id == "python" or path_of(uri, self.root, "").endswith(PYTHON_SUFFIXES)

    def snapshot(self, buffer: str) -> Optional[Snapshot]:
        notebook = self.workspace.get_notebook_document(notebook_uri=buffer)
        if notebook is not None:
            cells = []
            for cell in notebook.cells:
                document = self._text_document(cell.document)
                code = cell.kind == types.NotebookCellKind.Code and document is not None
                cells.append(Cell(cell.document, document.version if document is not None else None, code,
                                  document.source if document is not None else ""))
            return Snapshot(notebook.uri, path_of(notebook.uri, self.root, ".ipynb"), notebook.version,
                            cells=tuple(cells))
        document = self._text_document(buffer)
        if document is None:
            return None
        return Snapshot(buffer, path_of(buffer, self.root, ".py"), document.version, text=document.source)

    # ----- scheduling (event loop) ------------------------------------------------------------------

    def schedule(self, buffer: str, delay: float = 0.0) -> None:
        """Check the buffer after `delay` seconds without another change; from now on, results of
        earlier generations are dropped, and a check of one still waiting for the worker never runs.

        A debounced change to a quiet buffer (no change to it for `delay` seconds, no check pending)
        is checked at once: one edit, a paste or an undo gets its diagnostics in the time of a check.
        The changes that follow it while that check runs (typing) are debounced as usual, and the
        first check's result, outrun, is dropped."""
        if delay > 0:
            now = asyncio.get_running_loop().time()
            last = self._changed.get(buffer)
            self._changed[buffer] = now
            if buffer not in self._pending and (last is None or now - last >= delay):
                delay = 0.0
        generation = self._generation[buffer] = self._generation.get(buffer, 0) + 1
        previous = self._pending.pop(buffer, None)
        if previous is not None:
            previous.cancel()  # a debounce still waiting, or a check the worker has not started (dequeued)
        task = asyncio.ensure_future(self._check_later(buffer, generation, delay))
        self._pending[buffer] = task
        task.add_done_callback(lambda done: self._pending.pop(buffer) if self._pending.get(buffer) is done else None)

    def forget(self, buffer: str) -> None:
        self._generation.pop(buffer, None)
        self._changed.pop(buffer, None)
        self._reparsers.pop(buffer, None)
        self._checked.pop(buffer, None)
        self._last_good.pop(buffer, None)
        pending = self._pending.pop(buffer, None)
        if pending is not None:
            pending.cancel()
        for uri in self._published.pop(buffer, ()):
            self._publish(uri, [], None)

    def reload(self, configuration: bool = False, changed: Sequence[str] = (), everything: bool = False) -> None:
        """Files changed on disk. A configuration: every open buffer is checked again with a new resolver.
        Python modules: the project index starts afresh, and the buffers whose last check read one of
        them are checked again (all of them when a module came or went, which no check could read)."""
        if configuration:
            self._config_epoch += 1
            self._shown.clear()
        if changed or everything:
            self._files_epoch += 1
        paths = {os.path.abspath(path) for path in changed}
        for buffer in list(self._generation):
            checked = self._checked.get(buffer)
            if configuration or everything or checked is None or checked.deps & paths:
                self.schedule(buffer, self.options.debounce)

    def current(self, buffer: str, generation: int) -> bool:
        return self._generation.get(buffer) == generation

    async def _check_later(self, buffer: str, generation: int, delay: float) -> Optional[Checked]:
        if delay > 0:
            await asyncio.sleep(delay)
        snapshot = self.snapshot(buffer)  # read on the loop: pygls changes the buffers here
        if snapshot is None:
            return None
        try:
            checked = await asyncio.get_running_loop().run_in_executor(
                self._worker, self._check, buffer, generation, snapshot)
        except Exception:  # an engine bug must not take the editor's server down: log it
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Error,
                message=f"ddp-lint: internal error on {snapshot.path}:\n{traceback.format_exc()}"))
            return None
        if checked is None or not self.current(buffer, generation):
            return None  # the buffer changed (or closed) meanwhile: a newer check is scheduled
        self._checked[buffer] = checked
        if checked.error is not None and checked.error not in self._shown:
            self._shown.add(checked.error)
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error, message=f"ddp-lint: configuration error: {checked.error}"))
        if checked.unparsable is None:
            self._last_good[buffer] = checked.findings
        shown = checked.findings if checked.unparsable is None else self._last_good.get(buffer, [])
        by_uri = lsp_convert.diagnostics_by_uri(shown, snapshot, self.workspace.position_codec)
        if checked.unparsable is not None:
            problem = lsp_convert.unparsable_diagnostic(*checked.unparsable, snapshot, self.workspace.position_codec)
            if problem is not None and problem[0] in by_uri:
                by_uri[problem[0]].append(problem[1])
        versions = snapshot.texts()
        for uri in self._published.get(buffer, set()) - set(by_uri):
            self._publish(uri, [], None)  # a cell that left the notebook
        for uri, diagnostics in by_uri.items():
            self._publish(uri, diagnostics, versions[uri][1])
        self._published[buffer] = set(by_uri)
        try:
            self._worker.submit(self._tidy)
        except RuntimeError:  # shutting down
            pass
        return checked

    def _publish(self, uri: str, diagnostics: List[types.Diagnostic], version: Optional[int]) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))

    def last(self, buffer: str, generation: Any) -> Optional[Checked]:
        """The buffer's last check, if it is of this generation and that generation is current."""
        checked = self._checked.get(buffer)
        if checked is None or checked.generation != generation or not self.current(buffer, generation):
            return None
        return checked

    async def checked_now(self, buffer: str) -> Optional[Checked]:
        """The check of the buffer as it is now: the last one, or the one scheduled (awaited, debounce
        included: a code action request does not cut the debounce short); None for a buffer that is
        not open or keeps changing."""
        for _ in range(3):
            generation = self._generation.get(buffer)
            if generation is None:
                return None
            checked = self.last(buffer, generation)
            if checked is not None:
                return checked
            if buffer not in self._pending:
                self.schedule(buffer)  # the last check failed: try again
            await asyncio.wait({self._pending[buffer]})  # not cancelled with this request
        return None

    async def in_worker(self, function, *args):
        return await asyncio.get_running_loop().run_in_executor(self._worker, function, *args)

    def stop_worker(self) -> None:
        for task in self._pending.values():
            task.cancel()
        self._pending.clear()
        self._worker.shutdown(wait=False, cancel_futures=True)

    # ----- checking (worker thread) ------------------------------------------------------------------

    def _tidy(self) -> None:
        """After a publication, while the editor reads it: collect this check's cyclic garbage and
        freeze what survives (the buffers' parsed statements, mostly) out of the collector's sight.

        Left to itself, the collector ran a full collection every two or three checks of a 3,000-line
        buffer, each walking every retained tree (60-95 ms, the spikes in `benchmarks/lsp_latency.py`);
        after a freeze, a collection walks only what is newer (5-10 ms). A frozen object that later
        dies is still freed by its reference count; one in a reference cycle would wait for the
        collection that unfreezes everything, every `_FULL_COLLECTION_EVERY` publications."""
        self._tidied += 1
        if self._tidied % _FULL_COLLECTION_EVERY == 0:
            gc.unfreeze()
        gc.collect()
        gc.freeze()

    def _check(self, buffer: str, generation: int, snapshot: Snapshot) -> Optional[Checked]:
        if not self.current(buffer, generation):
            return None  # outrun before it started
        checked = Checked(generation, snapshot)
        try:
            resolver = self._resolver_now()
            resolved = resolver.for_path(snapshot.path)
            if Discovery(resolver).excluded_path(snapshot.path):
                return checked  # `force-exclude` leaves it out, as it does a file named on the command line
        except ConfigError as exc:
            checked.error = str(exc)
            return checked
        checked.settings, checked.root = resolved.settings, resolved.root
        try:
            document = snapshot.document()
        except InputError as exc:  # a notebook that cannot be read: said on the buffer's first line
            checked.unparsable = (str(exc), None, 1, 1)
            return checked
        try:
            project = self._project(checked)
            checked.findings = check(document, resolved.settings, project, reparser=self._reparser(buffer))
        except (InputError, RecursionError) as exc:
            # A syntax error (as ruff shows one), an unreadable notebook: said at its line, or the first.
            line = getattr(exc, "line", None) or 1
            cell, shown_line = document.place(line)
            detail = getattr(exc, "detail", None)
            message = f"SyntaxError: {detail}" if detail else render(str(exc) if isinstance(exc, InputError) else
                                                                     "file too deeply nested to parse", document.place)
            checked.unparsable = (message, cell, shown_line, getattr(exc, "column", None) or 1)
            return checked
        if project is not None:
            checked.deps = frozenset(os.path.abspath(path) for path in project.dependencies())
        return checked

    def _reparser(self, buffer: str) -> Optional[Reparser]:
        if buffer not in self._generation:
            return None  # closed meanwhile: parse it whole rather than keep its trees
        return self._reparsers.setdefault(buffer, Reparser())

    def _resolver_now(self) -> Resolver:
        epoch = self._config_epoch
        if self._resolver is None or self._resolver[0] != epoch:
            self._resolver = (epoch, Resolver(cwd=self.root))
        return self._resolver[1]

    def _project(self, checked: Checked):
        if self._index_epoch != self._files_epoch:
            from ..project.index import forget

            forget()  # other modules changed on disk: read them again
            self._index_epoch = self._files_epoch
        assert checked.settings is not None
        return project_index(checked.settings, checked.root)

    def fixed_texts(self, checked: Checked, finding: Optional[Finding]) -> Dict[str, str]:
        """Worker: the new text of each editor document for one finding's fix (None: fix all);
        empty when there is nothing to apply."""
        snapshot, settings = checked.snapshot, checked.settings
        if settings is None:
            return {}
        document = snapshot.document()
        project = self._project(checked)
        if finding is None:
            report = fix(document, settings, Mode.FIX, self.options.unsafe_fixes, project, write=False)
            if report.error is not None or report.output is None or report.fixed == 0:
                return {}
            return snapshot.changed_cells(report.output) if snapshot.is_notebook else {snapshot.uri: report.output}
        program = document.program or ""
        if checked.edited is None:
            # The edits are computed on the program: for a notebook, the joined code cells checked as
            # Python (a notebook's findings carry no edit), the result then cut back into cells.
            try:
                checked.edited = check(PythonDocument(snapshot.path, source_text(program)), settings, project,
                                       edits=True, reparser=self._reparser(snapshot.uri))
            except (InputError, RecursionError):
                checked.edited = []
        for candidate in checked.edited:
            cell, line = document.place(candidate.line)
            if (candidate.code, cell, line, candidate.column) != _key(finding):
                continue
            edit = candidate.fix.edit if candidate.fix is not None else None
            if edit is None:
                return {}
            fixed = apply_line_edit(program, edit)
            if not snapshot.is_notebook:
                return {snapshot.uri: fixed}
            try:
                return snapshot.changed_cells(document.rebuild(fixed))
            except InputError:
                return {}
        return {}


# ----- the protocol ----------------------------------------------------------------------------------

def build_server() -> DdpLintServer:
    server = DdpLintServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: DdpLintServer, params: types.InitializeParams) -> None:
        ls.options = Options.read(params.initialization_options)
        root = ls.workspace.root_path
        if not root and params.workspace_folders:
            root = path_of(params.workspace_folders[0].uri, os.getcwd(), "")
        ls.root = os.path.abspath(root) if root else os.getcwd()

    @server.feature(types.INITIALIZED)
    async def initialized(ls: DdpLintServer, params: types.InitializedParams) -> None:
        watched = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
        if not (watched and watched.dynamic_registration):
            return  # the client watches nothing for us; a configuration saved in the editor still reloads
        watchers = [types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_NAMES]
        watchers.append(types.FileSystemWatcher(glob_pattern="**/*.py"))
        try:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                id=_WATCHERS_ID, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))
        except Exception as exc:  # the client refused: configuration changes are then seen on save only
            logger.info("file watchers not registered: %s", exc)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: DdpLintServer, params: None) -> None:
        ls.stop_worker()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: DdpLintServer, params: types.DidOpenTextDocumentParams) -> None:
        if ls.is_python(params.text_document.uri):
            ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: DdpLintServer, params: types.DidChangeTextDocumentParams) -> None:
        if ls.is_python(params.text_document.uri):
            ls.schedule(params.text_document.uri, ls.options.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: DdpLintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = path_of(uri, ls.root, "")
        if os.path.basename(path) in CONFIG_NAMES:
            ls.reload(configuration=True)
        elif ls.is_python(uri):
            ls.reload(changed=[path])  # the buffers that import the saved module
            ls.schedule(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DdpLintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: DdpLintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: DdpLintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, ls.options.debounce)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: DdpLintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: DdpLintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.forget(params.notebook_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files(ls: DdpLintServer, params: types.DidChangeWatchedFilesParams) -> None:
        changes = [(path_of(change.uri, ls.root, ""), change.type) for change in params.changes]
        modules = [(path, kind) for path, kind in changes if path.endswith(PYTHON_SUFFIXES)]
        ls.reload(
            configuration=any(os.path.basename(path) in CONFIG_NAMES for path, _ in changes),
            changed=[path for path, _ in modules],
            everything=any(kind != types.FileChangeType.Changed for _, kind in modules),
        )

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=True))
    async def code_action(ls: DdpLintServer, params: types.CodeActionParams) -> Optional[List[types.CodeAction]]:
        return await code_actions(ls, params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: DdpLintServer, action: types.CodeAction) -> types.CodeAction:
        return await resolve(ls, action)

    return server


# ----- code actions -----------------------------------------------------------------------------------

def _wanted(kind: str, only: Optional[Sequence[str]]) -> bool:
    """Whether an action of `kind` answers a request limited to the kinds `only` (hierarchical)."""
    return only is None or any(kind == o or kind.startswith(f"{o}.") for o in only)


def _overlaps(diagnostic_range: types.Range, wanted: types.Range) -> bool:
    start = (diagnostic_range.start.line, diagnostic_range.start.character)
    end = (diagnostic_range.end.line, diagnostic_range.end.character)
    return start <= (wanted.end.line, wanted.end.character) and (wanted.start.line, wanted.start.character) <= end


def _fixable(finding: Finding, unsafe: bool) -> bool:
    fix = finding.fix
    return fix is not None and fix.available and (fix.applicability == SAFE or unsafe)


async def code_actions(ls: DdpLintServer, params: types.CodeActionParams) -> Optional[List[types.CodeAction]]:
    uri = params.text_document.uri
    buffer = ls.buffer_of(uri)
    checked = await ls.checked_now(buffer)
    if checked is None or checked.settings is None:
        return None
    codec = ls.workspace.position_codec
    only = [str(kind.value if hasattr(kind, "value") else kind) for kind in params.context.only] \
        if params.context.only else None
    texts = checked.snapshot.texts()
    actions: List[types.CodeAction] = []
    quick = _wanted(types.CodeActionKind.QuickFix.value, only)
    for index, finding in enumerate(checked.findings):
        converted = lsp_convert.diagnostic(finding, checked.snapshot, codec)
        if not quick or converted is None or converted[0] != uri or not _overlaps(converted[1].range, params.range):
            continue
        diagnostic = converted[1]
        if _fixable(finding, ls.options.unsafe_fixes):
            applicability = finding.fix.applicability
            description = finding.fix.message or "move the optimizer after the placement"
            actions.append(types.CodeAction(
                title=f"{finding.code}: {description[0].upper()}{description[1:]} ({applicability} fix)",
                kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic], is_preferred=applicability == SAFE,
                data={"buffer": buffer, "generation": checked.generation, "finding": index},
            ))
        place = checked.snapshot.place(finding.path, finding.cell, finding.line)
        noqa = lsp_convert.noqa_edit(texts[uri][0], place.line + 1, finding.code, codec) if place else None
        if noqa is not None:
            actions.append(types.CodeAction(
                title=f"Disable {finding.code} for this line", kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic], edit=_workspace_edit(ls, {uri: [noqa]}, texts),
            ))
    fixable = sum(_fixable(f, ls.options.unsafe_fixes) for f in checked.findings)
    if fixable and _wanted(FIX_ALL_KIND, only):
        actions.append(types.CodeAction(
            title=f"Fix all ddp-lint findings in this file ({fixable} fixable)", kind=FIX_ALL_KIND,
            data={"buffer": buffer, "generation": checked.generation, "finding": None},
        ))
    if not _client_resolves_edits(ls):
        actions = [await resolve(ls, action) if action.edit is None else action for action in actions]
    return actions


async def resolve(ls: DdpLintServer, action: types.CodeAction) -> types.CodeAction:
    """The edit of a fix action, computed when the user picks it (a fix costs a full analysis)."""
    data = action.data if isinstance(action.data, dict) else {}
    buffer, generation = data.get("buffer"), data.get("generation")
    checked = ls.last(buffer, generation) if isinstance(buffer, str) else None
    if checked is None:
        return action  # the document changed since: no edit (the editor asks again)
    index = data.get("finding")
    finding = checked.findings[index] if isinstance(index, int) and 0 <= index < len(checked.findings) else None
    if index is not None and finding is None:
        return action
    fixed = await ls.in_worker(ls.fixed_texts, checked, finding)
    if not fixed or not ls.current(buffer, generation):
        return action
    texts = checked.snapshot.texts()
    codec = ls.workspace.position_codec
    action.edit = _workspace_edit(
        ls, {uri: [lsp_convert.replacement(texts[uri][0], new, codec)] for uri, new in fixed.items()}, texts)
    return action


def _client_resolves_edits(ls: DdpLintServer) -> bool:
    capabilities = ls.client_capabilities.text_document
    code_action = capabilities.code_action if capabilities else None
    support = code_action.resolve_support if code_action else None
    return bool(support and "edit" in support.properties)


def _workspace_edit(ls: DdpLintServer, edits: Dict[str, List[types.TextEdit]], texts) -> types.WorkspaceEdit:
    """Versioned document edits where the client takes them (it refuses them on a changed document)."""
    workspace = ls.client_capabilities.workspace
    versioned = bool(workspace and workspace.workspace_edit and workspace.workspace_edit.document_changes)
    if not versioned:
        return types.WorkspaceEdit(changes=edits)
    return types.WorkspaceEdit(document_changes=[
        types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=texts[uri][1]),
            edits=list(changes))
        for uri, changes in edits.items()
    ])


def main(argv: Sequence[str] = ()) -> int:
    """Serve over stdio until the client says exit. `--stdio` is accepted (editors pass it)."""
    if any(arg in ("-h", "--help") for arg in argv):
        print("usage: ddp-lint server [--stdio]\n\nA Language Server Protocol server over stdio; "
              "initialization options: unsafeFixes (bool), debounceMs (int).")
        return 0
    unknown = [arg for arg in argv if arg != "--stdio"]
    if unknown:
        print(f"ddp-lint server: unknown argument {unknown[0]!r} (it speaks LSP over stdio)", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    stdout = sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries the protocol: a stray print must not corrupt it
    build_server().start_io(stdout=stdout)
    return 0
