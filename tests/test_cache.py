"""The result cache: reused when nothing changed, invalidated by content, tool version and settings."""
import json
import os

import pytest

from ddp_lint import cache as cache_module
from ddp_lint.cli import main

SEED = "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.cuda()\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.py").write_text(SEED)
    return tmp_path


def lint(capsys, *extra):
    code = main(["--cache-dir", "cache", "--output-format", "json", *extra, "s.py"])
    return code, json.loads(capsys.readouterr().out)


def analysed(monkeypatch):
    """The paths checked afresh (read, prefiltered and, where they can match, parsed)."""
    calls = []
    import ddp_lint.cli as cli

    real = cli.process
    monkeypatch.setattr(cli, "process", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    return calls


def test_second_run_is_served_from_the_cache_with_identical_output(project, capsys, monkeypatch):
    first = lint(capsys)
    calls = analysed(monkeypatch)
    assert lint(capsys) == first and calls == []
    assert first[0] == 1 and first[1]["findings"][0]["code"] == "DDP101"


def test_content_change_invalidates(project, capsys, monkeypatch):
    lint(capsys)
    (project / "s.py").write_text(SEED.replace("model.cuda()", "model.cpu()"))
    calls = analysed(monkeypatch)
    code, data = lint(capsys)
    assert calls == ["s.py"] and code == 0 and data["findings"] == []


def test_same_size_and_mtime_but_new_content_after_touch_is_rechecked(project, capsys, monkeypatch):
    lint(capsys)
    path = project / "s.py"
    stat = os.stat(path)
    path.write_text(SEED.replace("cuda()", "half()"))  # same length
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1000))
    calls = analysed(monkeypatch)
    code, data = lint(capsys)
    assert calls == ["s.py"] and "`model.half()`" in data["findings"][0]["message"]


def test_settings_change_invalidates(project, capsys, monkeypatch):
    lint(capsys)
    calls = analysed(monkeypatch)
    code, data = lint(capsys, "--select", "DDP0")
    assert calls == ["s.py"] and data["findings"] == []
    (project / "pyproject.toml").write_text('[tool.ddp-lint]\nextra-optimizer-factories = ["x.make"]\n')
    lint(capsys)
    assert calls == ["s.py", "s.py"]


def test_tool_version_change_invalidates(project, capsys, monkeypatch):
    lint(capsys)
    monkeypatch.setattr(cache_module, "__version__", "99.0")
    calls = analysed(monkeypatch)
    lint(capsys)
    assert calls == ["s.py"]


def test_a_change_to_the_tools_own_sources_invalidates_without_a_new_version(project, capsys, monkeypatch):
    """An editable install or a checkout: new analysis code under the same version number."""
    lint(capsys)
    calls = analysed(monkeypatch)
    lint(capsys)
    assert calls == []
    digest = cache_module.code_digest()
    monkeypatch.setattr(cache_module, "_DIGEST", [])
    real_open = open
    catalog = os.path.join(os.path.dirname(cache_module.__file__), "catalog.py")

    class Edited:
        """catalog.py with one byte changed: same size, and its mtime is never asked."""

        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def read(self):
            data = self.handle.read()
            return data[:-1] + (b"#" if data[-1:] != b"#" else b" ")

    def edited_open(path, mode="r", *args, **kwargs):
        handle = real_open(path, mode, *args, **kwargs)
        if os.path.abspath(str(path)) == catalog and "b" in mode:
            return Edited(handle)
        return handle

    monkeypatch.setattr("builtins.open", edited_open)
    assert cache_module.code_digest() != digest
    lint(capsys)
    assert calls == ["s.py"]


def test_cache_is_json_and_a_damaged_or_planted_file_is_ignored(project, capsys, monkeypatch):
    lint(capsys)
    (cache_file,) = [p for p in (project / "cache").iterdir() if p.suffix == ".json"]
    json.loads(cache_file.read_text())  # plain JSON, never pickle
    cache_file.write_bytes(b"\x80\x04\x95 not json")
    calls = analysed(monkeypatch)
    assert lint(capsys)[0] == 1 and calls == ["s.py"]


def test_no_cache_writes_nothing(project, capsys):
    main(["--no-cache", "--cache-dir", "cache", "s.py"])
    capsys.readouterr()
    assert not (project / "cache").exists()


def test_edits_replace_the_files_entry_and_gone_files_are_pruned(project, capsys):
    for n in range(5):
        (project / "s.py").write_text(SEED + f"x = {n}\n")
        lint(capsys)
    (project / "t.py").write_text(SEED)
    main(["--cache-dir", "cache", "t.py"])
    capsys.readouterr()
    data = json.loads((project / "cache" / cache_module.FILE_NAME).read_text())
    assert sorted(os.path.basename(p) for p in data["files"]) == ["s.py", "t.py"]  # five edits: one entry
    (project / "t.py").unlink()
    lint(capsys)
    data = json.loads((project / "cache" / cache_module.FILE_NAME).read_text())
    assert [os.path.basename(p) for p in data["files"]] == ["s.py"]


def test_entries_no_run_has_seen_for_a_month_are_pruned(project, capsys, monkeypatch):
    lint(capsys)
    (project / "t.py").write_text(SEED)
    main(["--cache-dir", "cache", "t.py"])
    capsys.readouterr()
    later = cache_module.time.time() + (cache_module.STALE_DAYS + 1) * 86400
    monkeypatch.setattr(cache_module.time, "time", lambda: later)
    lint(capsys)
    data = json.loads((project / "cache" / cache_module.FILE_NAME).read_text())
    assert [os.path.basename(p) for p in data["files"]] == ["s.py"]


def test_an_empty_gitignore_left_by_a_full_disk_is_rewritten(project, capsys):
    (project / "cache").mkdir()
    (project / "cache" / ".gitignore").write_text("")
    lint(capsys)
    assert (project / "cache" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_a_cache_that_cannot_be_written_is_said_once_on_stderr(project, capsys):
    (project / "blocker").write_text("a file where the cache folder should go")
    (project / "t.py").write_text(SEED)
    code = main(["--cache-dir", "blocker/cache", "--output-format", "concise", "-j", "1", "s.py", "t.py"])
    out, err = capsys.readouterr()
    assert code == 1 and out.count("DDP101") == 2  # the run itself is unaffected
    warnings = [line for line in err.splitlines() if "cache" in line]
    assert len(warnings) == 1 and warnings[0].startswith("ddp-lint: warning: cannot write the cache in blocker/cache")
