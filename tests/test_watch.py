"""`--watch`: the real command in a subprocess checks, sees a file edited, checks again with the new
result, and stops cleanly on Ctrl-C (SIGINT): exit 0, no traceback. Output is read as it comes,
with a deadline for each step, never by sleeping for a fixed time."""
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from cli_run import REPO

pytest.importorskip("watchfiles")

CLEAN = "import torch\nmodel = Net()\nmodel.cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
SEED = "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.cuda()\n"


class _Lines:
    """A process's stdout (or stderr), line by line, read in a thread so that waiting for one has a
    deadline, and so that the process never blocks on a full pipe nobody reads."""

    def __init__(self, stream) -> None:
        self.queue: "queue.Queue[str]" = queue.Queue()
        self.seen = []
        self.reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.reader.start()

    def text(self, timeout: float = 0.0) -> str:
        """Everything read so far (after waiting up to `timeout` for the stream to end)."""
        self.reader.join(timeout)
        while not self.queue.empty():
            self.seen.append(self.queue.get())
        return "".join(self.seen)

    def _read(self, stream) -> None:
        for line in stream:
            self.queue.put(line)

    def wait_for(self, text: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                line = self.queue.get(timeout=left)
            except queue.Empty:
                return False
            self.seen.append(line)
            if text in line:
                return True


@pytest.mark.slow
def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_watch_checks_again_after_an_edit_and_stops_cleanly_on_ctrl_c(tmp_path):
    (tmp_path / "train.py").write_text(CLEAN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "ddp_lint", "--watch", "--no-cache", "--isolated", "-j", "1", "--output-format",
         "concise", "."],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # Ctrl-C as a terminal delivers it, however pytest was started: a command run in the background
        # by a non-interactive shell (`.ci/run &`) starts with SIGINT ignored, and its children inherit that
        preexec_fn=_interruptible,
    )
    try:
        out, errors = _Lines(process.stdout), _Lines(process.stderr)
        assert out.wait_for("Starting linter in watch mode...", 60), out.seen
        assert out.wait_for("All checks passed!", 60), out.seen
        # the watcher is started before the first check runs, so one edit after it is always seen
        (tmp_path / "train.py").write_text(SEED)
        assert out.wait_for("File change detected...", 60), out.seen
        assert out.wait_for("train.py:3:1: DDP101", 60), out.seen
        assert any(line.startswith("\x1b[2J") for line in out.seen)  # the screen is cleared between runs
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 30 s after Ctrl-C; its stderr: {errors.text()[-3000:]!r}; "
                        f"stdout after the finding: {out.text()[-1000:]!r}")
        stderr = errors.text(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert code == 0, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr


def test_watch_refuses_fix_and_stdin_in_one_line(tmp_path, monkeypatch, capsys):
    from cli_run import run

    monkeypatch.chdir(tmp_path)
    assert run(capsys, "--watch", "--fix") == (2, "", "ddp-lint: error: --watch cannot be used with --fix\n")
    assert run(capsys, "--watch", "-") == (2, "", "ddp-lint: error: --watch watches files; it cannot read stdin\n")
    assert run(capsys, "--watch", "missing") == (2, "", "ddp-lint: error: --watch: no such file or folder: missing\n")


def test_only_checked_files_and_configurations_count_as_changes():
    from ddp_lint.watch import relevant

    assert [relevant(p) for p in ("a/train.py", "b.pyi", "nb.ipynb", "pyproject.toml", "ddp-lint.toml",
                                  ".ddp_lint_cache/v2.json", "notes.md")] == [True] * 5 + [False] * 2
