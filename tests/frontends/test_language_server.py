"""`ddp-lint server` end to end: a real LSP client (pytest-lsp) drives `python -m ddp_lint server` over
stdio, with torch made unimportable in the server process (the server must never need it)."""
import asyncio
import sys
from pathlib import Path
from typing import List

import pytest

pytest.importorskip("pytest_lsp")

import pytest_lsp  # noqa: E402
from lsprotocol import types  # noqa: E402
from pygls.protocol import default_converter  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features  # noqa: E402

from .conftest import CLEAN, REPO, SEED, SEED_FIXED, run_command  # noqa: E402

pytestmark = pytest.mark.slow

# `python -m ddp_lint server`, with `import torch` failing in the server process.
SERVER = [sys.executable, "-c",
          "import runpy, sys; sys.modules['torch'] = None; sys.argv = ['ddp-lint', 'server']; "
          "runpy.run_module('ddp_lint', run_name='__main__', alter_sys=True)"]
DEBOUNCE_MS = 50
TIMEOUT = 30  # seconds: a loaded 2-core CI machine; each wait normally ends in well under one

TWO_FINDINGS = """import torch

def first(net):
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    net.cuda()
    return opt

def second(net):
    opt = torch.optim.Adam(net.parameters())
    net.to("cuda")
    return opt
"""
UNSAFE = """import torch
model = torch.nn.Linear(2, 2)
params = list(model.parameters())
opt = torch.optim.SGD(params, lr=0.1)
shuffle_groups(params)
model.double()
"""
REFUSED = """import torch
model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
print(locals()["opt"])
model.double()
"""


def _recording_client() -> LanguageClient:
    """pytest-lsp's client, also keeping every publication in order (it keeps only the last per URI)
    and answering the server's registration of file watchers."""
    client = LanguageClient(converter_factory=default_converter)
    client.published = []
    client.registrations = []
    features = dict(DEFAULT_CLIENT_FEATURES)
    default_publish = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def publish(client: LanguageClient, params):
        client.published.append(params)
        default_publish(client, params)

    def register(client: LanguageClient, params):
        client.registrations.extend(params.registrations)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    features[types.CLIENT_REGISTER_CAPABILITY] = register
    register_lsp_features(client, features)
    return client


CONFIG = ClientServerConfig(server_command=SERVER, client_factory=_recording_client)


async def _start(client: LanguageClient, root: Path, capabilities=None, **options) -> None:
    await client.initialize_session(types.InitializeParams(
        capabilities=capabilities or client_capabilities("visual-studio-code"),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="work")],
        initialization_options={"debounceMs": DEBOUNCE_MS, **options},
    ))


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient, tmp_path):
    await _start(lsp_client, tmp_path)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def unsafe_client(lsp_client: LanguageClient, tmp_path):
    await _start(lsp_client, tmp_path, unsafeFixes=True)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def plain_client(lsp_client: LanguageClient, tmp_path):
    """A client that resolves nothing and takes unversioned edits: the server sends edits at once."""
    await _start(lsp_client, tmp_path, capabilities=types.ClientCapabilities())
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def slow_debounce_client(lsp_client: LanguageClient, tmp_path):
    await _start(lsp_client, tmp_path, debounceMs=SLOW_DEBOUNCE_MS)
    yield
    await lsp_client.shutdown_session()


SLOW_DEBOUNCE_MS = 3000


# ----- helpers -------------------------------------------------------------------------------------

async def published(client, uri, since=0, version=None) -> types.PublishDiagnosticsParams:
    """The first publication for `uri` at or after index `since` of the client's record (of that
    version, when given)."""
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while True:
        for params in client.published[since:]:
            if params.uri == uri and (version is None or params.version == version):
                return params
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no diagnostics for {uri} (version {version}); got {client.published[since:]}")
        await asyncio.sleep(0.01)


async def until(condition, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def open_file(client, path: Path, text: str, version: int = 1) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    return uri


def change(client, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def apply_edits(text: str, edits: List[types.TextEdit]) -> str:
    """The client's side of a workspace edit (ASCII texts: UTF-16 units are characters)."""
    lines = text.splitlines(keepends=True)

    def offset(position):
        return sum(len(line) for line in lines[: position.line]) + position.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def edits_by_uri(edit: types.WorkspaceEdit):
    if edit.document_changes:
        return {change.text_document.uri: list(change.edits) for change in edit.document_changes}
    return dict(edit.changes or {})


async def actions_at(client, uri, diagnostic, only=None):
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic], only=only)))


# ----- text documents ------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_open_publishes_the_finding_with_its_rule_docs_and_placement(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "train.py", SEED)
    (diagnostic,) = (await published(client, uri, version=1)).diagnostics
    assert diagnostic.code == "DDP101" and diagnostic.source == "ddp-lint"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert (diagnostic.range.start.line, diagnostic.range.start.character) == (3, 0)
    assert diagnostic.message.startswith("optimizer `optimizer` built before `model.cuda()` (line 5)\n")
    docs = Path(diagnostic.code_description.href[len("file://"):])
    assert docs.name.startswith("ddp101_") and "What it does" in docs.read_text()
    (related,) = diagnostic.related_information
    assert related.location.uri == uri and related.location.range.start.line == 4
    assert related.message == "placement: `model.cuda()`"


@pytest.mark.asyncio
async def test_change_is_rechecked_after_the_debounce_and_save_rechecks(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "train.py", SEED)
    await published(client, uri, version=1)
    change(client, uri, CLEAN, 2)
    assert not (await published(client, uri, version=2)).diagnostics
    change(client, uri, SEED, 3)
    assert len((await published(client, uri, version=3)).diagnostics) == 1
    since = len(client.published)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [d.code for d in (await published(client, uri, since)).diagnostics] == ["DDP101"]


@pytest.mark.asyncio
async def test_move_fix_applied_makes_the_diagnostic_go(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "train.py", SEED)
    (diagnostic,) = (await published(client, uri, version=1)).diagnostics
    actions = await actions_at(client, uri, diagnostic)
    move = next(a for a in actions if a.title.startswith("DDP101: Move the optimizer"))
    assert move.title.endswith("(safe fix)") and move.is_preferred and move.edit is None  # VS Code resolves
    move = await client.code_action_resolve_async(move)
    (edits,) = edits_by_uri(move.edit).values()
    fixed = apply_edits(SEED, edits)
    assert fixed == SEED_FIXED
    change(client, uri, fixed, 2)
    assert not (await published(client, uri, version=2)).diagnostics


@pytest.mark.asyncio
async def test_fix_all_and_noqa_for_a_client_that_resolves_nothing(plain_client: LanguageClient, tmp_path):
    client = plain_client
    uri = open_file(client, tmp_path / "train.py", TWO_FINDINGS)
    diagnostics = (await published(client, uri, version=1)).diagnostics
    assert [d.code for d in diagnostics] == ["DDP101", "DDP101"]
    (fix_all,) = await actions_at(client, uri, diagnostics[0], only=[types.CodeActionKind.SourceFixAll])
    assert fix_all.kind == "source.fixAll.ddp-lint" and fix_all.edit is not None
    fixed = apply_edits(TWO_FINDINGS, fix_all.edit.changes[uri])
    assert "net.cuda()\n    opt = torch.optim.SGD" in fixed and 'net.to("cuda")\n    opt = torch.optim.Adam' in fixed
    change(client, uri, fixed, 2)
    assert not (await published(client, uri, version=2)).diagnostics

    change(client, uri, TWO_FINDINGS, 3)
    diagnostics = (await published(client, uri, version=3)).diagnostics
    noqa = next(a for a in await actions_at(client, uri, diagnostics[1]) if a.title == "Disable DDP101 for this line")
    silenced = apply_edits(TWO_FINDINGS, noqa.edit.changes[uri])
    assert "opt = torch.optim.Adam(net.parameters())  # noqa: DDP101\n" in silenced
    change(client, uri, silenced, 4)
    assert [d.range.start.line for d in (await published(client, uri, version=4)).diagnostics] == [3]


@pytest.mark.asyncio
async def test_unsafe_fixes_are_offered_only_when_asked_and_refusals_say_why(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "unsafe.py", UNSAFE)
    (diagnostic,) = (await published(client, uri, version=1)).diagnostics
    assert "(unsafe fix: line 5 passes `params`" in diagnostic.message
    titles = [a.title for a in await actions_at(client, uri, diagnostic)]
    assert titles == ["Disable DDP101 for this line"]  # no move, no fix-all

    refused = open_file(client, tmp_path / "refused.py", REFUSED)
    (diagnostic,) = (await published(client, refused, version=1)).diagnostics
    assert "(no automatic fix: line 4 reads the namespace" in diagnostic.message


@pytest.mark.asyncio
async def test_unsafe_fix_with_the_unsafe_fixes_option(unsafe_client: LanguageClient, tmp_path):
    client = unsafe_client
    uri = open_file(client, tmp_path / "unsafe.py", UNSAFE)
    (diagnostic,) = (await published(client, uri, version=1)).diagnostics
    actions = await actions_at(client, uri, diagnostic)
    move = next(a for a in actions if a.title.startswith("DDP101: Move"))
    assert move.title.endswith("(unsafe fix)") and not move.is_preferred
    move = await client.code_action_resolve_async(move)
    fixed = apply_edits(UNSAFE, edits_by_uri(move.edit)[uri])
    assert fixed.endswith("model.double()\nopt = torch.optim.SGD(params, lr=0.1)\n")


# ----- notebooks -----------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_notebook_cells_get_their_own_diagnostics_and_a_cross_cell_fix(client: LanguageClient, tmp_path):
    notebook = (tmp_path / "train.ipynb").as_uri()
    texts = ["import torch\nmodel = Net()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
             "Now move the model.", "model.cuda()"]
    kinds = [types.NotebookCellKind.Code, types.NotebookCellKind.Markup, types.NotebookCellKind.Code]
    cells = [f"{notebook}#cell{i}" for i in range(3)]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=notebook, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=kind, document=cell) for kind, cell in zip(kinds, cells)]),
        cell_text_documents=[
            types.TextDocumentItem(uri=cell, language_id=language, version=1, text=text)
            for cell, language, text in zip(cells, ["python", "markdown", "python"], texts)]))
    (diagnostic,) = (await published(client, cells[0], version=1)).diagnostics
    assert diagnostic.code == "DDP101" and diagnostic.range.start.line == 2  # line 3 of the first cell
    assert diagnostic.message.startswith("optimizer `optimizer` built before `model.cuda()` (line 1 of cell 3)\n")
    (related,) = diagnostic.related_information
    assert related.location.uri == cells[2] and related.location.range.start.line == 0
    assert not (await published(client, cells[2], version=1)).diagnostics

    move = next(a for a in await actions_at(client, cells[0], diagnostic) if a.title.startswith("DDP101: Move"))
    move = await client.code_action_resolve_async(move)
    edits = edits_by_uri(move.edit)
    assert set(edits) == {cells[0], cells[2]}
    new = {cell: apply_edits(texts[i], edits[cell]) for i, cell in enumerate(cells) if cell in edits}
    assert "optimizer" not in new[cells[0]] and new[cells[2]].startswith("model.cuda()\noptimizer = ")
    (fix_all,) = await actions_at(client, cells[0], diagnostic, only=[types.CodeActionKind.SourceFixAll])
    fix_all = await client.code_action_resolve_async(fix_all)
    assert {cell: apply_edits(texts[cells.index(cell)], e) for cell, e in edits_by_uri(fix_all.edit).items()} == new
    since = len(client.published)
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=notebook, version=2),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=cell, version=2),
                changes=[types.TextDocumentContentChangeWholeDocument(text=text)])
            for cell, text in new.items()]))))
    assert not (await published(client, cells[0], since, version=2)).diagnostics


# ----- configuration, broken input, rapid changes ------------------------------------------------

@pytest.mark.asyncio
async def test_a_changed_configuration_rechecks_open_files(client: LanguageClient, tmp_path):
    await until(lambda: client.registrations, "the server to register its file watchers")
    (registration,) = client.registrations
    assert registration.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    uri = open_file(client, tmp_path / "train.py", SEED)
    assert len((await published(client, uri, version=1)).diagnostics) == 1
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.ddp-lint]\nignore = ["DDP101"]\n')
    since = len(client.published)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Created)]))
    assert not (await published(client, uri, since)).diagnostics

    config.write_text('[tool.ddp-lint]\nselect = ["DDP9"]\n')  # no such rule: an error the user must see
    since = len(client.published)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Changed)]))
    assert not (await published(client, uri, since)).diagnostics
    assert any("configuration error" in m.message and "pyproject.toml" in m.message for m in client.messages)

    config.write_text("[tool.ddp-lint]\n")
    since = len(client.published)
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=config.as_uri())))  # saved in the editor
    assert len((await published(client, uri, since)).diagnostics) == 1


@pytest.mark.asyncio
async def test_a_changed_project_module_rechecks_the_files_that_read_it(client: LanguageClient, tmp_path):
    helpers = tmp_path / "helpers.py"
    helpers.write_text("def place(net):\n    net.cuda()\n    return net\n")
    uri = open_file(client, tmp_path / "train.py", "import torch\nfrom helpers import place\n\nmodel = Net()\n"
                    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nplace(model)\n")
    (diagnostic,) = (await published(client, uri, version=1)).diagnostics
    assert {r.location.uri for r in diagnostic.related_information} == {uri, helpers.as_uri()}
    other = open_file(client, tmp_path / "other.py", CLEAN)  # reads no project module
    await published(client, other, version=1)
    helpers.write_text("def place(net):\n    return net\n")
    since = len(client.published)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=helpers.as_uri(), type=types.FileChangeType.Changed)]))
    assert not (await published(client, uri, since)).diagnostics
    await asyncio.sleep(0.3)
    assert [p.uri for p in client.published[since:]] == [uri]  # not other.py


@pytest.mark.asyncio
async def test_a_syntax_error_is_shown_and_the_last_findings_stay_until_the_text_parses(
        client: LanguageClient, tmp_path):
    # It used to publish no diagnostics at all: the syntax error was invisible, and the findings
    # vanished at each keystroke that left the text unparsable, then came back (flicker).
    uri = open_file(client, tmp_path / "train.py", SEED)
    assert [d.code for d in (await published(client, uri, version=1)).diagnostics] == ["DDP101"]
    change(client, uri, SEED + "def broken(:\n", 2)
    diagnostics = (await published(client, uri, version=2)).diagnostics
    syntax = [d for d in diagnostics if d.code is None]
    assert [d.code for d in diagnostics if d.code is not None] == ["DDP101"]  # kept from the last good text
    (error,) = syntax
    assert error.message.startswith("SyntaxError: ") and error.severity == types.DiagnosticSeverity.Error
    assert error.range.start.line == SEED.count("\n") and error.source == "ddp-lint"
    change(client, uri, SEED, 3)
    assert [d.code for d in (await published(client, uri, version=3)).diagnostics] == ["DDP101"]


@pytest.mark.asyncio
async def test_a_file_opened_with_a_syntax_error_shows_it_and_the_server_goes_on(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "train.py", SEED + "def broken(:\n")
    (error,) = (await published(client, uri, version=1)).diagnostics
    assert error.code is None and error.message.startswith("SyntaxError: ")
    change(client, uri, SEED, 2)
    assert [d.code for d in (await published(client, uri, version=2)).diagnostics] == ["DDP101"]


@pytest.mark.asyncio
async def test_fifty_rapid_changes_publish_only_the_last(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "train.py", CLEAN)
    await published(client, uri, version=1)
    since = len(client.published)
    for version in range(2, 52):
        # every other text has the finding; the last one has it one line lower than all the others
        text = SEED if version % 2 else CLEAN
        change(client, uri, text if version < 51 else "\n" + SEED, version)
    (diagnostic,) = (await published(client, uri, since, version=51)).diagnostics
    assert diagnostic.range.start.line == 4
    await asyncio.sleep(0.3)  # anything still in flight would arrive now
    versions = [p.version for p in client.published[since:]]
    # Never an older version's result after a newer one, the last version last; the debounce
    # coalesced the burst (one publication here, unless the machine stalled the server mid-burst).
    assert versions == sorted(set(versions)) and versions[-1] == 51 and len(versions) < 10


@pytest.mark.asyncio
async def test_a_result_the_document_outran_is_never_published(client: LanguageClient, tmp_path):
    # 1,500 lines whose check takes a few tenths of a second: the next change arrives while it runs
    # (every function renamed, so none of version 1's parsed statements serves version 2)
    big = "import torch\n\n\n" + "".join(
        f"def stage_{i}(net, lr):\n    net.cuda()\n    opt = torch.optim.SGD(net.parameters(), lr=lr)\n"
        f"    return opt\n\n\n" for i in range(250))
    uri = open_file(client, tmp_path / "train.py", big)
    await published(client, uri, version=1)
    since = len(client.published)
    change(client, uri, big.replace("def stage_", "def step_") + SEED, 2)
    await asyncio.sleep((DEBOUNCE_MS + 100) / 1000)  # version 2's check has started (or is queued)
    change(client, uri, big + CLEAN, 3)
    assert not (await published(client, uri, since, version=3)).diagnostics
    await asyncio.sleep(0.3)
    assert [p.version for p in client.published[since:]] == [3]


# ----- the command ---------------------------------------------------------------------------------

def test_the_server_command_without_pygls_says_how_to_install_it():
    done = run_command([sys.executable, "-c", "import sys; sys.modules['pygls'] = None; "
                        "from ddp_lint.cli import main; sys.exit(main(['server']))"], REPO)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.rstrip().endswith("pip install pygls")


def test_the_server_command_is_listed_and_has_help():
    assert "ddp-lint server" in run_command([sys.executable, "-m", "ddp_lint", "--help"], REPO).stdout
    done = run_command([sys.executable, "-m", "ddp_lint", "server", "--help"], REPO)
    assert done.returncode == 0 and "over stdio" in done.stdout


def test_after_a_publication_survivors_are_frozen_and_a_frozen_cycle_waits_for_the_periodic_full_collection():
    import gc
    import weakref

    from ddp_lint.frontends import language_server

    class Node:
        pass

    server = language_server.DdpLintServer()
    try:
        gc.unfreeze()
        cycle = Node()
        cycle.self = cycle
        alive = weakref.ref(cycle)
        server._tidy()  # the cycle is alive: frozen with the rest
        assert gc.get_freeze_count() > 0
        del cycle  # now garbage, but frozen: no collection sees it ...
        for _ in range(language_server._FULL_COLLECTION_EVERY - 2):
            server._tidy()
        assert alive() is not None
        server._tidy()  # ... until the periodic one that unfreezes everything first
        assert alive() is None
    finally:
        server.stop_worker()
        gc.unfreeze()


@pytest.mark.asyncio
async def test_a_change_to_a_quiet_buffer_is_checked_at_once_and_the_changes_after_it_are_debounced(
        slow_debounce_client: LanguageClient, tmp_path):
    client = slow_debounce_client
    loop = asyncio.get_running_loop()
    uri = open_file(client, tmp_path / "train.py", CLEAN)
    await published(client, uri, version=1)
    sent = loop.time()
    change(client, uri, SEED, 2)
    assert [d.code for d in (await published(client, uri, version=2)).diagnostics] == ["DDP101"]
    assert loop.time() - sent < SLOW_DEBOUNCE_MS / 1000 / 2  # not held back by the debounce
    since = len(client.published)
    sent = loop.time()
    change(client, uri, CLEAN, 3)  # typing on: within the debounce of the last change
    change(client, uri, "\n" + SEED, 4)
    (diagnostic,) = (await published(client, uri, since, version=4)).diagnostics
    assert diagnostic.range.start.line == 4
    assert loop.time() - sent >= SLOW_DEBOUNCE_MS / 1000 * 0.9
    assert [p.version for p in client.published[since:]] == [4]
