"""Files checked across processes: every file reported once, in order, and a dying worker costs one file."""
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

from ddp_lint import cli
from ddp_lint.parallel import check_in_processes
from ddp_lint.pipeline import FileReport


def _echo(path: str, job: tuple) -> FileReport:
    return FileReport(path, error=f"{job[0]}:{path}:{os.getpid()}")


def _dies_on_kill(path: str, job: tuple) -> FileReport:
    if path.startswith("kill"):
        os.kill(os.getpid(), signal.SIGKILL)
    if path.startswith("exit"):
        raise SystemExit(3)  # escapes the per-file guard the CLI puts around its own work
    return _echo(path, job)


def _paths(n: int):
    return [f"f{i}.py" for i in range(n)]


def _slow_echo(path: str, job: tuple) -> FileReport:
    time.sleep(0.002)  # long enough that the second worker is up before the first has taken everything
    return _echo(path, job)


def test_every_path_reported_once_in_order_across_processes():
    paths = _paths(300)
    reports = check_in_processes(paths, _slow_echo, ("tag",), 2)
    assert [r.path for r in reports] == paths
    assert all(r.error.startswith(f"tag:{r.path}:") for r in reports)
    workers = {r.error.rsplit(":", 1)[1] for r in reports}
    assert str(os.getpid()) not in workers and len(workers) == 2


@pytest.mark.parametrize("culprit, how", [("kill.py", "was killed by signal 9"), ("exit.py", "exited with status 3")])
def test_a_dying_worker_costs_only_the_file_it_was_checking(culprit, how):
    paths = _paths(150) + [culprit] + _paths(400)[150:]
    reports = check_in_processes(paths, _dies_on_kill, ("tag",), 2)
    assert [r.path for r in reports] == paths
    assert reports[150].error == f"internal error: the checking process {how} on this file"
    others = reports[:150] + reports[151:]
    assert all(r.error.startswith(f"tag:{r.path}:") for r in others)


def test_files_left_when_every_worker_died_are_checked_in_the_parent():
    paths = ["kill-a.py", "kill-b.py"] + _paths(50)
    reports = check_in_processes(paths, _dies_on_kill, ("tag",), 2)
    assert [r.error.endswith("killed by signal 9 on this file") for r in reports[:2]] == [True, True]
    assert {r.error.rsplit(":", 1)[1] for r in reports[2:]} == {str(os.getpid())}


def test_cli_reports_an_internal_error_for_one_file_and_checks_the_rest(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    seed = "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters())\nmodel.cuda()\n"
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(seed)
    real = cli.process

    def process(path, *args, **kwargs):
        if path.endswith("b.py"):
            raise ValueError("boom")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(cli, "process", process)
    forked = multiprocessing.get_start_method() == "fork"  # only forked workers inherit the patch
    for jobs in ("1", "2") if forked else ("1",):
        code = cli.main(["--no-cache", "-j", jobs, "."])
        out, err = capsys.readouterr()
        assert code == 2 and "Traceback" not in out + err
        assert "b.py: error: internal error: ValueError: boom (please report it)" in out
        assert out.count("DDP101") == 2


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_cli_jobs_work_under_every_start_method(tmp_path, method):
    """macOS and Windows start workers with spawn, Python 3.14 on Linux with forkserver: nothing a
    worker needs may depend on inheriting the parent's memory."""
    seed = "import torch\nmodel = Net()\nopt = torch.optim.SGD(model.parameters())\nmodel.cuda()\n"
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text(seed)
    (tmp_path / "clean.py").write_text("x = 1\n")
    script = (
        "import multiprocessing, sys\n"
        f"multiprocessing.set_start_method({method!r})\n"
        "from ddp_lint.cli import main\n"
        "if __name__ == '__main__':\n"
        "    sys.exit(main(sys.argv[1:]))\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script, "--no-cache", "-j", jobs, "."], cwd=tmp_path,
                       capture_output=True, text=True)
        for jobs in ("1", "2")
    ]
    assert [r.returncode for r in runs] == [1, 1] and runs[0].stdout == runs[1].stdout
    assert runs[1].stdout.count("DDP101") == 5 and runs[1].stderr == ""


def test_without_shared_memory_the_files_are_checked_in_this_process(monkeypatch):
    class NoSharedMemory:
        def Value(self, *args, **kwargs):
            raise PermissionError(13, "Permission denied: '/dev/shm'")

    monkeypatch.setattr(multiprocessing, "get_context", lambda *a: NoSharedMemory())
    reports = check_in_processes(_paths(5), _echo, ("tag",), 2)
    assert [r.error for r in reports] == [f"tag:f{i}.py:{os.getpid()}" for i in range(5)]


def test_when_no_worker_can_start_this_process_checks_every_file(monkeypatch):
    def refuse(self):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
    reports = check_in_processes(_paths(5), _echo, ("tag",), 2)
    assert [r.error for r in reports] == [f"tag:f{i}.py:{os.getpid()}" for i in range(5)]
