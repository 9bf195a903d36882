"""How `--fix` writes: never over someone else's edit, hard links kept, owner kept, no temporary left behind.

Mode, encoding, BOM, line endings, read-only files and a failed rename are in test_fix_cli.py.
"""
import os

import pytest

import ddp_lint.fixer.apply
from ddp_lint.cli import main
from ddp_lint.fixer.writer import write_atomic
from ddp_lint.documents.python import InputError, read_source

SEED = """import torch
model = torch.nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.cuda()
"""
FIXED = """import torch
model = torch.nn.Linear(2, 2)
model.cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""
APPENDED = "print('added while --fix ran')\n"
CHANGED = "file changed on disk while it was being fixed; not fixed"


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def fix(capsys, *paths):
    code = main(["--fix", "--no-cache", "-j", "1", *paths])
    out, err = capsys.readouterr()
    return code, out + err


def temporaries(folder):
    return [p.name for p in folder.iterdir() if p.name.startswith(".ddp-lint-")]


def test_the_seed_is_fixable(cwd, capsys):
    (cwd / "p.py").write_text(SEED)
    code, out = fix(capsys, "p.py")
    assert code == 0 and "(1 fixed, 0 remaining)" in out
    assert (cwd / "p.py").read_text() == FIXED


# LibCST's code for these trees drops the form feed, and the whitespace-only lines near the end.
UNFAITHFUL_TEXTS = {
    "form_feed_before_a_statement": "import torch\n\x0cdef main():\n" + "".join(
        "    " + line + "\n" for line in SEED.splitlines()[1:]),
    "whitespace_lines_at_the_end": SEED + "def f():\n    x = 1\n    \n\n   \n",
}


@pytest.mark.parametrize("name", sorted(UNFAITHFUL_TEXTS))
def test_file_libcst_does_not_give_back_is_left_alone_with_its_findings(cwd, capsys, name):
    text = UNFAITHFUL_TEXTS[name]
    (cwd / "p.py").write_bytes(text.encode())
    code, out = fix(capsys, "p.py")
    assert code == 2
    assert "p.py: error: not fixed: LibCST does not give this file's text back exactly" in out
    assert "DDP101" in out and "Found 1 finding in 1 file; 1 error." in out
    assert (cwd / "p.py").read_bytes() == text.encode()


def test_no_edit_offered_where_libcst_does_not_give_the_file_back(cwd, capsys):
    (cwd / "p.py").write_bytes(UNFAITHFUL_TEXTS["form_feed_before_a_statement"].encode())
    main(["--no-cache", "--output-format", "json", "p.py"])
    import json

    finding, = json.loads(capsys.readouterr().out)["findings"]
    assert finding["fix"]["available"] and "edit" not in finding["fix"]


@pytest.mark.parametrize("links", [1, 2], ids=["plain", "hard-linked"])
def test_file_changed_after_reading_is_refused_and_keeps_the_change(cwd, links):
    path = cwd / "p.py"
    path.write_text(SEED)
    if links == 2:
        os.link(path, cwd / "other.py")
    source = read_source(str(path))
    with open(path, "a") as handle:
        handle.write(APPENDED)
    with pytest.raises(InputError) as raised:
        write_atomic(str(path), FIXED, source)
    assert str(raised.value) == CHANGED
    assert path.read_text() == SEED + APPENDED
    assert not temporaries(cwd)


def test_file_changed_during_fix_through_the_cli_is_one_error_line(cwd, capsys, monkeypatch):
    path = cwd / "p.py"
    path.write_text(SEED)
    real_fix_source = ddp_lint.fixer.apply.fix_source

    def fix_then_someone_edits(*args, **kwargs):
        result = real_fix_source(*args, **kwargs)
        with open(path, "a") as handle:
            handle.write(APPENDED)
        return result

    monkeypatch.setattr(ddp_lint.fixer.apply, "fix_source", fix_then_someone_edits)
    code, out = fix(capsys, "p.py")
    assert code == 2
    assert [line for line in out.splitlines() if line.startswith("p.py")] == [f"p.py: error: {CHANGED}"]
    assert path.read_text() == SEED + APPENDED
    assert not temporaries(cwd)


def test_hard_link_is_fixed_in_place_for_every_name(cwd, capsys):
    first, second = cwd / "a.py", cwd / "b.py"
    first.write_text(SEED)
    os.link(first, second)
    inode = os.stat(first).st_ino
    assert fix(capsys, "a.py")[0] == 0
    assert first.read_text() == second.read_text() == FIXED
    assert os.stat(first).st_ino == os.stat(second).st_ino == inode
    assert os.stat(first).st_nlink == 2
    assert not temporaries(cwd)


@pytest.mark.parametrize(
    "failure", [KeyboardInterrupt, OSError(28, "No space left on device")], ids=["ctrl-c", "oserror"]
)
def test_hard_link_write_that_fails_puts_the_original_back(cwd, monkeypatch, failure):
    first, second = cwd / "a.py", cwd / "b.py"
    first.write_text(SEED)
    os.link(first, second)
    source = read_source(str(first))
    real_fsync, calls = os.fsync, []

    def fail_first(fd):  # the write's fsync fails, the restore's goes through
        calls.append(fd)
        if len(calls) == 1:
            raise failure
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fail_first)
    expected = KeyboardInterrupt if failure is KeyboardInterrupt else InputError
    with pytest.raises(expected) as raised:
        write_atomic(str(first), FIXED + "# longer than the original\n" * 50, source)
    if expected is InputError:
        assert str(raised.value) == "write failed: No space left on device; file left unchanged"
    assert len(calls) == 2
    assert first.read_text() == second.read_text() == SEED


def test_owner_and_group_are_given_to_the_temporary_before_the_rename(cwd, capsys, monkeypatch):
    path = cwd / "p.py"
    path.write_text(SEED)
    info = os.stat(path)
    events = []
    real_replace = os.replace
    monkeypatch.setattr(os, "chown", lambda target, uid, gid: events.append(("chown", str(target), uid, gid)))

    def recording_replace(source, destination):
        events.append(("replace", str(source)))
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", recording_replace)
    assert fix(capsys, "p.py")[0] == 0
    assert [event[0] for event in events] == ["chown", "replace"]
    (_, chowned, uid, gid), (_, renamed) = events
    assert (uid, gid) == (info.st_uid, info.st_gid)
    assert chowned == renamed and os.path.basename(chowned).startswith(".ddp-lint-")
    assert path.read_text() == FIXED


def test_chown_not_permitted_does_not_stop_the_write(cwd, capsys, monkeypatch):
    path = cwd / "p.py"
    path.write_text(SEED)
    os.chmod(path, 0o640)
    refused = []

    def not_root(target, uid, gid):
        refused.append(target)
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "chown", not_root)
    code, out = fix(capsys, "p.py")
    assert refused and code == 0 and "error" not in out
    assert path.read_text() == FIXED
    assert os.stat(path).st_mode & 0o777 == 0o640


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError(5, "Input/output error")], ids=["ctrl-c", "oserror"])
def test_failure_while_writing_the_temporary_leaves_original_and_no_temporary(cwd, monkeypatch, failure):
    path = cwd / "p.py"
    path.write_text(SEED)
    source = read_source(str(path))
    raised = []

    def fail(fd):
        raised.append(fd)
        raise failure

    monkeypatch.setattr(os, "fsync", fail)
    expected = KeyboardInterrupt if failure is KeyboardInterrupt else InputError
    with pytest.raises(expected) as caught:
        write_atomic(str(path), FIXED, source)
    if expected is InputError:
        assert str(caught.value) == "write failed: Input/output error; file left unchanged"
    assert raised
    assert path.read_text() == SEED
    assert sorted(p.name for p in cwd.iterdir()) == ["p.py"]


def test_ctrl_c_during_the_write_ends_the_cli_run_as_interrupted(cwd, capsys, monkeypatch):
    path = cwd / "p.py"
    path.write_text(SEED)

    def interrupt(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    code, out = fix(capsys, "p.py")
    assert code == 130 and "ddp-lint: interrupted" in out
    assert path.read_text() == SEED
    assert sorted(p.name for p in cwd.iterdir()) == ["p.py"]
