"""The hooks in `.pre-commit-hooks.yaml`, installed and run by the real `pre-commit` in a throwaway repository.

The hook repository is a snapshot of this working tree (tracked files and untracked, not ignored
ones) committed into a temporary git repository, so the test exercises the code under test even
before it is committed. pre-commit builds its own virtual environment for the hook: that install
needs the package index (libcst), as a user's first `pre-commit run` does.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import CLEAN, NOTEBOOKS, REPO, SEED, SEED_FIXED

pytestmark = pytest.mark.slow

GIT = shutil.which("git")


def git(*args, cwd):
    done = subprocess.run(
        [GIT, "-c", "user.name=ddp-lint tests", "-c", "user.email=tests@ddp-lint.invalid", "-c", "commit.gpgsign=false",
         "-c", "init.defaultBranch=main", *args],
        cwd=str(cwd), capture_output=True, text=True, check=True,
    )
    return done.stdout


def snapshot_of_this_tree(destination: Path) -> str:
    """Copy the project's files into `destination`, commit them there, return the commit's sha."""
    listed = subprocess.run(
        [GIT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=str(REPO), capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file() and not source.is_symlink():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    git("init", "-q", cwd=destination)
    git("add", "-A", cwd=destination)
    git("commit", "-q", "-m", "snapshot for the pre-commit test", cwd=destination)
    return git("rev-parse", "HEAD", cwd=destination).strip()


def pre_commit(project: Path, home: Path, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "PYTHONPATH", "VIRTUAL_ENV"))}
    env.update(PRE_COMMIT_HOME=str(home), PIP_DISABLE_PIP_VERSION_CHECK="1", PRE_COMMIT_COLOR="never")
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--color", "never", *args],
        cwd=str(project), capture_output=True, text=True, env=env, timeout=600,
    )


def config(repo: Path, rev: str, hook: str) -> str:
    return yaml.safe_dump({"repos": [{"repo": str(repo), "rev": rev, "hooks": [{"id": hook}]}]})


@pytest.mark.skipif(GIT is None, reason="needs git")
def test_check_hook_fails_on_bad_file_passes_on_good_one_and_fix_hook_rewrites(tmp_path):
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    # pre-commit names every staged file: --force-exclude keeps the exclusions (build/, .gitignore) in force
    assert {h["id"]: h["entry"] for h in hooks} == {
        "ddp-lint": "ddp-lint check --force-exclude", "ddp-lint-fix": "ddp-lint check --fix --force-exclude"}
    assert all(h["types_or"] == ["python", "jupyter"] for h in hooks)

    hook_repo, project, home = tmp_path / "hook-repo", tmp_path / "project", tmp_path / "pre-commit-home"
    hook_repo.mkdir()
    project.mkdir()
    rev = snapshot_of_this_tree(hook_repo)
    (project / ".pre-commit-config.yaml").write_text(config(hook_repo, rev, "ddp-lint"))
    (project / "fix-config.yaml").write_text(config(hook_repo, rev, "ddp-lint-fix"))
    (project / "bad.py").write_text(SEED)
    (project / "good.py").write_text(CLEAN)
    shutil.copy(NOTEBOOKS / "cross_cell.ipynb", project / "train.ipynb")
    git("init", "-q", cwd=project)
    git("add", "-A", cwd=project)

    checked = pre_commit(project, home, "--all-files")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "bad.py:4:1: DDP101 " in checked.stdout
    assert "train.ipynb:cell 3:3:1: DDP101 " in checked.stdout  # notebooks reach the hook (types_or: jupyter)
    assert "good.py" not in checked.stdout
    # pre-commit's own environment for the hook: the base install only, never torch
    assert not list(home.glob("**/site-packages/torch"))

    passed = pre_commit(project, home, "--files", "good.py")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout

    fixed = pre_commit(project, home, "--all-files", "--config", "fix-config.yaml")
    assert fixed.returncode == 1  # pre-commit fails a hook that changed files, so the fix gets reviewed
    assert "files were modified by this hook" in fixed.stdout
    assert (project / "bad.py").read_text() == SEED_FIXED
    assert (project / "good.py").read_text() == CLEAN
    assert (project / "train.ipynb").read_bytes() == (NOTEBOOKS / "cross_cell.fixed.ipynb").read_bytes()

    git("add", "-A", cwd=project)
    again = pre_commit(project, home, "--all-files")
    assert again.returncode == 0, again.stdout + again.stderr
