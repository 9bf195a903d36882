"""Fixture projects (`fixtures/projects/<name>/`): several modules checked as one project, the way the
CLI checks a tree. `# expect:` comments sit in the file where each finding is reported; checked
alone, without the project, the same files report only what one file shows.

A project with an `# engine-v3: known miss` or `# engine-v3: known false report` line in one of its
files (`model_*`: causes of misses and false reports that engine v3 must fix) states the CORRECT
findings, which today's engine does not give: its comparison runs as a strict xfail (it must fail
today; an unexpected pass is an error, then delete the marker line), and the checks of what a single
file shows leave it out until then."""
import os
import re
from pathlib import Path

import pytest

from ddp_lint.findings import shown_in_run
from ddp_lint.pipeline import placements_reported_in, process, project_index
from ddp_lint.settings import Selection, Settings

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "projects"
ALL = Settings(Selection(select=("ALL",)))
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")
PROJECTS = sorted(p for p in ROOT.iterdir() if p.is_dir())
KNOWN = re.compile(r"^#\s*engine-v3:\s*known (miss|false report)\b", re.MULTILINE)


def known_v3_failure(project: Path):
    for path in sorted(project.rglob("*.py")):
        match = KNOWN.search(path.read_text(encoding="utf-8"))
        if match:
            return f"engine-v3: known {match.group(1)} ({path.relative_to(project)})"
    return None


def with_v3_marks(projects):
    return [pytest.param(p, id=p.name, marks=[pytest.mark.xfail(strict=True, reason=known_v3_failure(p))]
                         if known_v3_failure(p) else []) for p in projects]


MET = [p for p in PROJECTS if not known_v3_failure(p)]


def expected(project: Path):
    found = set()
    for path in sorted(project.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            match = EXPECT.search(line)
            if match:
                found.update((str(path.relative_to(project)), number, c.strip()) for c in match.group(1).split(",") if c.strip())
    return found


def reports(project: Path, settings: Settings, files=None):
    """Each file's report as the CLI shows it when the run checks `files` (every file by default)."""
    paths = sorted(project.rglob("*.py")) if files is None else [project / f for f in files]
    run = {os.path.abspath(path) for path in paths}
    out = {}
    for path in paths:
        report = process(str(path), settings, root=str(project))
        assert report.error is None, report.error
        out[str(path.relative_to(project))] = report.findings
    return {path: shown_in_run(findings, run, lambda module: placements_reported_in(
        module, settings, project_index(settings, str(project)))) for path, findings in out.items()}


def check(project: Path, settings: Settings):
    return {(path, f.line, f.code) for path, findings in reports(project, settings).items() for f in findings}


@pytest.mark.parametrize("project", with_v3_marks(PROJECTS))
def test_project_findings_match_expect_comments(project):
    assert check(project, ALL) == expected(project)


@pytest.mark.parametrize("project", [p for p in MET if p.name.startswith("callee_")], ids=lambda p: p.name)
def test_the_callee_side_needs_no_other_module(project):
    """`callee_*` projects: a function handed the optimizer with the model moves the model itself.
    One file shows it, so a check without the project finds it too."""
    from dataclasses import replace

    callee_files = {path for path, _, _ in expected(project) if "main" not in path}
    assert {f for f in check(project, replace(ALL, project=False)) if f[0] in callee_files} == \
        {f for f in expected(project) if f[0] in callee_files}


@pytest.mark.parametrize("project", [p for p in MET if expected(p) and not p.name.startswith("callee_")],
                         ids=lambda p: p.name)
def test_the_findings_need_the_other_modules(project):
    from dataclasses import replace

    # What remains is the callee side (a function handed the optimizer moves the model itself), which
    # one file shows; what came from following the other modules is gone.
    assert check(project, replace(ALL, project=False)) < expected(project)


@pytest.mark.parametrize("project", [p for p in MET if expected(p)], ids=lambda p: p.name)
def test_a_caller_checked_without_the_api_reports_the_pair(project):
    """One report per bug in a run: at the API, naming its callers, when the run checks the API's
    module; a caller in another module that the API's report names, checked without it, reports the
    pair itself (a pre-commit run sees only the changed script), saying which function takes the
    optimizer. Checked together again, the caller's report is gone (test above)."""
    callers = {}
    for path, findings in reports(project, ALL).items():
        for finding in findings:
            for related in finding.related:
                caller = os.path.relpath(os.path.abspath(related.path), project)  # shown from the working folder
                if related.role == "caller" and caller != path:
                    callers.setdefault(caller, set()).add(path)
    for caller, apis in callers.items():
        alone = reports(project, ALL, [caller])[caller]
        deferred = {os.path.relpath(os.path.abspath(d), project) for f in alone for d in f.deferred_to}
        # (a caller that gave the optimizer state first reports the pair as its own in every run)
        assert alone and (apis <= deferred or any(not f.deferred_to for f in alone)), (caller, apis)
        assert all("this run does not check it" in f.message for f in alone if f.deferred_to)
        # and `--fix` leaves it alone: the placement is made in the other module
        assert all(f.fix is not None and not f.fix.available for f in alone if f.deferred_to)


@pytest.mark.parametrize("project", [p for p in PROJECTS if p.name.startswith("callee_3be_")], ids=lambda p: p.name)
def test_a_caller_of_a_constructor_that_orders_both_halves_reports_them_only_without_its_module(project):
    """`Solver(net)` whose constructor builds the optimizer and then moves the model: the class's bug,
    reported at the class (one report per bug). The caller's replay keeps the constructor's order (the
    holder it kept before the move), so a run that checks the caller alone reports the pair there, and
    says where; a run that checks the class's module too shows the class's report only. A constructor
    that moves first, or moves what the optimizer lacks, gives the caller nothing either way."""
    together = reports(project, ALL)
    assert not together["train.py"] and bool(together["engine/solver.py"]) == bool(expected(project))
    alone = reports(project, ALL, ["train.py"])["train.py"]
    assert [(f.line, f.code) for f in alone] == ([(11, "DDP101")] if expected(project) else [])
    for finding in alone:
        assert [os.path.relpath(os.path.abspath(d), project) for d in finding.deferred_to] == ["engine/solver.py"]
        assert "this run does not check it" in finding.message


@pytest.mark.parametrize("project", [p for p in PROJECTS if "_3bf_" in p.name or p.name == "agent_ctor_builds_optimizer"],
                         ids=lambda p: p.name)
def test_a_class_checked_without_the_caller_that_moves_its_object_reports_the_pair(project):
    """`agent = ActorCritic(...); agent.to(device)` in another module, whose constructor built the optimizer:
    the caller reports the pair (the `# expect:` comments). A run that checks the class's module alone
    reports it at the optimizer the constructor builds, saying which caller moves the object and where,
    with no automatic fix; a run that checks both shows the caller's report only. A caller in the class's
    own module, or a move of a part no optimizer there holds, adds nothing."""
    together = reports(project, ALL)
    callers = {path for path, _, _ in expected(project)}
    classes = [path for path in together if path not in callers and not path.endswith("__init__.py")]
    assert {(path, f.line, f.code) for path, findings in together.items() for f in findings} == expected(project)
    for path in classes:
        alone = reports(project, ALL, [path])[path]
        if not expected(project):
            assert alone == []
            continue
        assert len(alone) == 1 and alone[0].code == "DDP101", alone
        assert [os.path.relpath(os.path.abspath(d), project) for d in alone[0].deferred_to] == sorted(callers)
        assert "(by a caller, in " in alone[0].message and "at the caller; this run does not check it" in alone[0].message
        assert alone[0].fix is not None and not alone[0].fix.available
        assert any(os.path.relpath(os.path.abspath(r.path), project) in callers for r in alone[0].related)


def test_positives_and_hard_negatives_are_both_there():
    assert sum(1 for p in PROJECTS if expected(p)) >= 4
    assert sum(1 for p in PROJECTS if not expected(p)) >= 3


def _tree(tmp_path, trainer_body, caller_loads_state=False):
    (tmp_path / "trainer.py").write_text(
        "class Trainer:\n    def __init__(self, model, optimizer, device):\n" + trainer_body
        + "        self.optimizer = optimizer\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\nfrom trainer import Trainer\n\n\ndef main(model, device, state):\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        + ("    opt.load_state_dict(state)\n" if caller_loads_state else "")
        + "    return Trainer(model, opt, device)\n"
    )


def _run_cli(tmp_path, capsys, *extra, paths=(".",)):
    from ddp_lint.cli import main

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = main(["--output-format", "json", "-j", "1", "--cache-dir", str(tmp_path / ".cache"), *extra, *paths])
    finally:
        os.chdir(cwd)
    import json

    return code, [(os.path.normpath(f["path"]), f["line"], f["code"]) for f in json.loads(capsys.readouterr().out)["findings"]]


def test_cache_follows_a_change_in_the_callee_module_only(tmp_path, capsys):
    # The caller loads state before handing the optimizer over: its own pair (DDP002), beside the API's.
    _tree(tmp_path, "        self.model = model.to(device)\n", caller_loads_state=True)
    both = (1, [("train.py", 6, "DDP002"), ("trainer.py", 3, "DDP101")])  # the caller's and the callee's side
    assert _run_cli(tmp_path, capsys) == both
    assert _run_cli(tmp_path, capsys) == both  # from the cache
    # Only the callee changes: it no longer moves the model. The caller's cached finding must go.
    (tmp_path / "trainer.py").write_text(
        "class Trainer:\n    def __init__(self, model, optimizer, device):\n        self.model = model\n"
        "        self.optimizer = optimizer\n"
    )
    assert _run_cli(tmp_path, capsys) == (0, [])
    # And back: the finding reappears although train.py never changed.
    _tree(tmp_path, "        self.model = model.to(device)\n", caller_loads_state=True)
    (tmp_path / "train.py").touch()
    assert _run_cli(tmp_path, capsys) == both


def test_a_class_checked_alone_follows_a_change_in_its_callers_module(tmp_path, capsys):
    """The class's side of a pair its caller orders (`policy.to(device)` after `Policy()` built the
    optimizer): a run that checks the class's module alone reports it, from the cache too, in a pool too;
    once the caller stops moving the object, the cached report goes although the class never changed,
    and it comes back with the move. The caller's module is the report's dependency, also while its
    check can report nothing (it is then not analysed)."""
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "__init__.py").write_text("")
    (tmp_path / "agents" / "policy.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Policy(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.net = nn.Linear(4, 2)\n"
        "        self.opt = torch.optim.Adam(self.parameters(), lr=1e-3)\n")
    moving = ("from agents.policy import Policy\n\n\ndef run(device):\n    policy = Policy()\n    policy.to(device)\n"
              "    return policy\n")
    still = "from agents.policy import Policy\n\n\ndef run(device):\n    policy = Policy()\n    return policy\n"
    alone = {"paths": ("agents/policy.py",)}
    class_side = (1, [(os.path.join("agents", "policy.py"), 9, "DDP101")])
    (tmp_path / "main.py").write_text(moving)
    for extra in (("--no-cache",), (), (), ("--no-cache", "-j", "2")):
        assert _run_cli(tmp_path, capsys, *extra, **alone) == class_side
    assert _run_cli(tmp_path, capsys) == (1, [("main.py", 5, "DDP101")])  # both checked: the caller's only
    (tmp_path / "main.py").write_text(still)
    assert _run_cli(tmp_path, capsys, **alone) == (0, [])
    (tmp_path / "main.py").write_text(moving)
    assert _run_cli(tmp_path, capsys, **alone) == class_side


def test_one_report_per_bug_in_each_run(tmp_path, capsys):
    """The caller hands its optimizer to the API that moves the model: a run that checks the API's
    module reports the pair there once; a run that checks the caller alone (a pre-commit hook that
    sees one changed script) reports it at the caller, from the cache too, in a pool too."""
    _tree(tmp_path, "        self.model = model.to(device)\n")
    api, caller = (1, [("trainer.py", 3, "DDP101")]), (1, [("train.py", 6, "DDP101")])
    for extra in (("--no-cache",), (), (), ("--no-cache", "-j", "2")):  # fresh, filling the cache, from it, a pool
        assert _run_cli(tmp_path, capsys, *extra) == api
        assert _run_cli(tmp_path, capsys, *extra, paths=("train.py",)) == caller
        assert _run_cli(tmp_path, capsys, *extra, paths=("train.py", "trainer.py")) == api
    assert _run_cli(tmp_path, capsys, "--no-cache", paths=("trainer.py",)) == api


@pytest.mark.parametrize("moves", ["self.net.cuda()", "self.place()"])
def test_a_class_that_orders_both_halves_is_reported_at_its_caller_in_a_run_without_it(tmp_path, capsys, moves):
    """The class builds its optimizer in `__init__` and its own method moves the network: the class's
    bug, reported in its module (one report for every caller); checked alone, the script that builds
    the object and calls that method reports it, on the line that builds the object (a script whose
    text names neither half is not analysed at all: the prefilter stops there, README "Speed")."""
    (tmp_path / "model.py").write_text(
        "import torch\n\n\nclass Model:\n    def __init__(self):\n        self.net = torch.nn.Linear(2, 2)\n"
        "        self.opt = torch.optim.Adam(self.net.parameters())\n\n"
        f"    def setgpu(self):\n        {moves}\n\n"
        "    def place(self):\n        self.net.cuda()\n\n"
        "    def step(self):\n        self.opt.step()\n"
    )
    (tmp_path / "train.py").write_text(
        "from model import Model\n\nmodel = Model()\noptimizer = model.opt\nmodel.setgpu()\noptimizer.step()\n")
    api = (1, [("model.py", 7, "DDP101")])
    assert _run_cli(tmp_path, capsys, "--no-cache") == api
    assert _run_cli(tmp_path, capsys, "--no-cache", paths=("train.py",)) == (1, [("train.py", 3, "DDP101")])
    assert _run_cli(tmp_path, capsys, "--no-cache", paths=("train.py", "model.py")) == api


def test_a_caller_alone_is_quiet_where_the_api_reports_nothing(tmp_path, capsys):
    """The caller's report stands only where a check of the API's module reports the same placement:
    that side may know what the caller's replay does not (here, that the API's report is silenced;
    avalanche's strategies re-point their optimizer before every step, which a caller's replay of
    `strategy.train()` does not see)."""
    _tree(tmp_path, "        self.model = model.to(device)  # noqa: DDP101\n")
    assert _run_cli(tmp_path, capsys, "--no-cache", paths=("train.py",)) == (0, [])
    _tree(tmp_path, "        self.model = model.to(device)\n")
    assert _run_cli(tmp_path, capsys, "--no-cache", paths=("train.py",)) == (1, [("train.py", 6, "DDP101")])


def test_add_noqa_comments_the_report_the_run_shows(tmp_path, capsys):
    from ddp_lint.cli import main

    def add_noqa(*paths):
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            return main(["--no-cache", "--add-noqa", *paths])
        finally:
            os.chdir(cwd)

    _tree(tmp_path, "        self.model = model.to(device)\n")
    original = (tmp_path / "train.py").read_text()
    assert add_noqa(".") == 0
    assert (tmp_path / "train.py").read_text() == original  # the API's report is the one shown
    assert "# noqa: DDP101" in (tmp_path / "trainer.py").read_text().splitlines()[2]
    _tree(tmp_path, "        self.model = model.to(device)\n")
    assert add_noqa("train.py") == 0
    assert "# noqa: DDP101" in (tmp_path / "train.py").read_text().splitlines()[5]
    capsys.readouterr()
    assert _run_cli(tmp_path, capsys, "--no-cache", paths=("train.py",)) == (0, [])


def test_project_false_in_the_config_checks_each_file_alone(tmp_path, capsys):
    _tree(tmp_path, "        self.model = model.to(device)\n", caller_loads_state=True)
    assert _run_cli(tmp_path, capsys, "--no-cache") == (1, [("train.py", 6, "DDP002"), ("trainer.py", 3, "DDP101")])
    (tmp_path / "pyproject.toml").write_text("[tool.ddp-lint]\nproject = false\n")
    # the callee side needs no other module; the caller's finding does
    assert _run_cli(tmp_path, capsys, "--no-cache") == (1, [("trainer.py", 3, "DDP101")])


def test_src_setting_resolves_imports_from_another_folder(tmp_path, capsys):
    (tmp_path / "lib" / "helpers").mkdir(parents=True)
    (tmp_path / "lib" / "helpers" / "__init__.py").write_text("")
    (tmp_path / "lib" / "helpers" / "gpu.py").write_text("def to_gpu(model):\n    return model.cuda()\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.py").write_text(
        "import torch\nfrom helpers.gpu import to_gpu\n\n\ndef main(model):\n"
        "    opt = torch.optim.Adagrad(model.parameters())\n    model = to_gpu(model)\n"
    )
    assert _run_cli(tmp_path, capsys, "--no-cache") == (0, [])
    (tmp_path / "pyproject.toml").write_text('[tool.ddp-lint]\nsrc = ["lib"]\n')
    assert _run_cli(tmp_path, capsys, "--no-cache") == (1, [("scripts/run.py", 6, "DDP002")])


def test_cache_follows_a_change_in_the_caller_module_only(tmp_path, capsys):
    # The callee side: trainer.py is reported unless every caller placed the model first. Only the
    # caller changes, so trainer.py's cached result must be recomputed from the new call facts.
    _tree(tmp_path, "        self.model = model.to(device)\n")
    # one bug, one report: the caller hands its optimizer to the parameter that takes it, and the
    # callee's side reports the pair (with the caller's own state, both would: test above)
    both = (1, [("trainer.py", 3, "DDP101")])
    assert _run_cli(tmp_path, capsys) == both
    (tmp_path / "train.py").write_text(
        "import torch\nfrom trainer import Trainer\n\n\ndef main(model, device):\n    model.to(device)\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    return Trainer(model, opt, device)\n"
    )
    assert _run_cli(tmp_path, capsys) == (0, [])
    assert _run_cli(tmp_path, capsys) == (0, [])  # from the cache
    _tree(tmp_path, "        self.model = model.to(device)\n")
    assert _run_cli(tmp_path, capsys) == both


def test_a_notebook_follows_the_project_modules_it_imports(tmp_path, capsys):
    import json

    (tmp_path / "helpers.py").write_text("def to_gpu(model):\n    return model.cuda()\n")
    cells = [
        "import torch\nfrom helpers import to_gpu\nmodel = torch.nn.Linear(4, 2)",
        "opt = torch.optim.Adagrad(model.parameters())",
        "model = to_gpu(model)",
    ]
    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": text.splitlines(keepends=True)} for text in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    (tmp_path / "explore.ipynb").write_text(json.dumps(notebook))
    code, found = _run_cli(tmp_path, capsys, "--no-cache")
    assert (code, [c for _, _, c in found]) == (1, ["DDP002"])  # Adagrad's eager state, moved by the helper
    (tmp_path / "helpers.py").write_text("def to_gpu(model):\n    return model\n")
    assert _run_cli(tmp_path, capsys, "--no-cache") == (0, [])


def test_base_class_methods_outside_the_tree_come_from_the_config(tmp_path, capsys):
    # The base class lives in an installed library: only the catalog can say what its methods do.
    (tmp_path / "trainer.py").write_text(
        "from my_lib.trainer import BaseTrainer\n\n\nclass Trainer(BaseTrainer):\n"
        "    def fit(self):\n        self.build_optimizers()\n        self.to_device()\n"
    )
    assert _run_cli(tmp_path, capsys, "--no-cache") == (0, [])
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ddp-lint]\nextra-base-methods = { "my_lib.trainer.BaseTrainer.build_optimizers" = "optimizer",'
        ' "my_lib.trainer.BaseTrainer.to_device" = "move" }\n'
    )
    assert _run_cli(tmp_path, capsys, "--no-cache") == (1, [("trainer.py", 6, "DDP101")])
    # another library's class with the same method names is not described
    (tmp_path / "trainer.py").write_text(
        (tmp_path / "trainer.py").read_text().replace("from my_lib.trainer import", "from other_lib import")
    )
    assert _run_cli(tmp_path, capsys, "--no-cache") == (0, [])


def test_a_wrong_base_method_kind_is_a_one_line_config_error(tmp_path, capsys):
    from ddp_lint.cli import main

    (tmp_path / "pyproject.toml").write_text('[tool.ddp-lint]\nextra-base-methods = { "my_lib.Base.go" = "teleport" }\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = main(["--no-cache", "."])
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err.strip()
    assert code == 2 and "extra-base-methods" in err and len(err.splitlines()) == 1


def test_a_caller_analysed_for_its_callee_is_checked_from_that_analysis(tmp_path, monkeypatch):
    # loop.py comes first: its constructor's side needs what main.py passes, so main.py is analysed
    # then; main.py's own check takes that analysis instead of parsing and walking the file again.
    import ddp_lint.analysis.module as module_analysis
    import ddp_lint.engine as engine
    from ddp_lint.project import index

    _modules(tmp_path, loop=(
        "class Trainer:\n    def __init__(self, model, optimizer, device):\n"
        "        self.model = model.to(device)\n        self.optimizer = optimizer\n"), main=(
        "import torch\nfrom loop import Trainer\n\n\ndef main(model, device):\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    model.half()\n"
        "    return Trainer(model, opt, device)\n"))
    paths = [str(tmp_path / "loop.py"), str(tmp_path / "main.py")]

    def findings(fresh_index_each):
        found = []
        for path in paths:
            if fresh_index_each:
                index._INDEXES.clear()
            report = process(path, ALL, root=str(tmp_path))
            assert report.error is None
            found.append(sorted((f.line, f.code, f.message) for f in report.findings))
        return found

    alone = findings(fresh_index_each=True)
    walked = []
    real = module_analysis.analyze_module

    def counting(module, catalog, overwrite_flag=False, project=None, path="", source=None):
        walked.append(os.path.basename(path))
        return real(module, catalog, overwrite_flag, project, path, source)

    monkeypatch.setattr(module_analysis, "analyze_module", counting)
    monkeypatch.setattr(engine, "analyze_module", counting)
    index._INDEXES.clear()
    assert findings(fresh_index_each=False) == alone
    assert sorted(walked) == ["loop.py", "main.py"]  # each file once: main.py's for loop.py's sake
    assert alone[1], "main.py reports its own cast after the optimizer"


def test_what_the_index_keeps_is_left_out_of_later_collections(tmp_path):
    # Summaries of other modules live as long as the process; each full collection of the cyclic
    # collector walked them again (1.3 s of DeepSpeed's 7.7 s). A CLI check freezes them once made.
    import gc

    from ddp_lint.project import index

    _modules(tmp_path, loop=(
        "class Trainer:\n    def __init__(self, model, optimizer, device):\n"
        "        self.model = model.to(device)\n        self.optimizer = optimizer\n"), main=(
        "import torch\nfrom loop import Trainer\n\n\ndef main(model, device):\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    return Trainer(model, opt, device)\n"))
    index._INDEXES.clear()
    gc.unfreeze()
    try:
        process(str(tmp_path / "main.py"), ALL, root=str(tmp_path))
        frozen = gc.get_freeze_count()
        assert frozen > 0
        process(str(tmp_path / "main.py"), ALL, root=str(tmp_path))  # nothing new summarised
        assert gc.get_freeze_count() <= frozen  # frozen objects still go when nothing holds them
    finally:
        gc.unfreeze()


def test_a_report_at_the_api_names_the_calls_that_hand_it_the_optimizer(tmp_path):
    # One report per bug: at the API, with its callers as related locations. A caller that hands no
    # optimizer, or that placed the model first, is no caller of this bug. Another module's call is
    # found by its text (its tree is not kept), and left out where that text occurs twice.
    _modules(tmp_path, loop=(
        "class Trainer:\n    def __init__(self, model, optimizer, device):\n"
        "        self.model = model.to(device)\n        self.optimizer = optimizer\n\n\n"
        "def local_run(model, device, opt):\n    return Trainer(model, opt, device)\n"), main=(
        "import torch\nfrom loop import Trainer\n\n\ndef main(model, device):\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    first = Trainer(model,\n                    opt,\n                    device)\n"
        "    second = Trainer(model, None, device)\n    return first, second\n\n\n"
        "def placed(model, device):\n    model.to(device)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    return Trainer(model, opt, device=device)\n"))
    assert _callers_named(tmp_path) == [
        ("loop.py", 8, 12, "`Trainer(...)` hands it the optimizer"),  # this file's own call first
        ("main.py", 7, 13, "`Trainer(...)` hands it the optimizer"),  # over three lines, found all the same
    ]
    # the same text twice in main.py (one call harmless): which line is the caller's is unknown, so
    # main.py's is not named rather than named at the wrong line
    (tmp_path / "main.py").write_text(
        "import torch\nfrom loop import Trainer\n\n\ndef main(model, device):\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    return Trainer(model, opt, device)\n\n\n"
        "def placed(model, device):\n    model.to(device)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    return Trainer(model, opt, device)\n")
    assert [where for where, _, _, _ in _callers_named(tmp_path)] == ["loop.py"]


def _callers_named(tmp_path):
    """(file, line, column, message) of each caller loop.py's report names, from a new index."""
    from ddp_lint.project import index

    index._INDEXES.clear()
    report = process(str(tmp_path / "loop.py"), ALL, root=str(tmp_path))
    (finding,) = [f for f in report.findings if f.code == "DDP101"]
    return [(os.path.basename(r.path), r.line, r.column, r.message) for r in finding.related if r.role == "caller"]


def test_a_caller_that_leaves_the_optimizer_at_its_default_is_not_named(tmp_path):
    # transformers' `Trainer(args=args, model=model)` in a callback: `optimizers=(None, None)` stays as
    # it is, so that call hands the trainer no optimizer of its own
    _modules(tmp_path, loop=(
        "class Trainer:\n    def __init__(self, model, device, optimizers=(None, None)):\n"
        "        self.optimizer, self.scheduler = optimizers\n        self.model = model.to(device)\n"), main=(
        "import torch\nfrom loop import Trainer\n\n\ndef main(model, device):\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    return Trainer(model, device, (opt, None))\n\n\n"
        "def save(model, device):\n    return Trainer(model=model, device=device)\n"))
    assert [(where, line) for where, line, _, _ in _callers_named(tmp_path)] == [("main.py", 7), ("main.py", 6)]


def test_a_report_at_the_api_names_where_each_caller_builds_the_optimizer(tmp_path):
    # The callers' fix is to build the optimizer after the placement: the statement that builds it is
    # named beside the call. A caller that forwards an optimizer it was handed, or gets it from a
    # helper, builds none of its own there.
    _modules(tmp_path, loop=(
        "class Trainer:\n    def __init__(self, model, optimizer, device):\n"
        "        self.model = model.to(device)\n        self.optimizer = optimizer\n"), main=(
        "import torch\nfrom loop import Trainer\n\n\ndef main(model, device):\n"
        "    opt = torch.optim.AdamW(model.parameters(),\n                            lr=0.1)\n"
        "    return Trainer(model, opt, device)\n\n\n"
        "def forward(model, device, opt):\n    return Trainer(model, opt, device=device)\n\n\n"
        "def make(model):\n    return torch.optim.SGD(model.parameters(), lr=0.1)\n\n\n"
        "def helper(model, device):\n    return Trainer(model, make(model), device=device)\n\n\n"
        "def inline(model, device):\n    return Trainer(model, torch.optim.Adam(model.parameters()), device)\n"))
    named = _callers_named(tmp_path)  # an optimizer built in the call's arguments is named by the call
    assert ("main.py", 6, 11, "builds it here (`AdamW`), before the call on line 8") in named
    assert [line for where, line, _, message in named if message.startswith("builds")] == [6]
    assert {line for _, line, _, message in named if message.endswith("hands it the optimizer")} == {8, 12, 20, 24}


def _modules(tmp_path, **texts):
    """The project's modules: `loop.py` (the API) and `main.py` (its callers)."""
    for name, text in texts.items():
        (tmp_path / f"{name}.py").write_text(text)


def test_a_holder_kept_on_an_object_built_in_the_same_expression_is_named_as_the_code_spells_it(tmp_path, capsys):
    # `Agent(net).setup()` (3bh): the walk names the object for the call; messages never show that name
    _modules(tmp_path,
             lib="import torch\n\n\nclass Agent:\n    def __init__(self, net):\n        self.net = net\n\n"
                 "    def setup(self):\n        self.opt = torch.optim.Adam(self.net.parameters())\n"
                 "        return self.opt\n",
             main="from lib import Agent\n\n\ndef main(net, device):\n    opt = Agent(net).setup()\n"
                  "    net.to(device)\n    opt.step()\n")
    from ddp_lint.cli import main

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = main(["--output-format", "concise", "-j", "1", "--no-cache", "."])
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert code == 1 and "main.py:5:5: DDP101 optimizer `Agent(net).opt` built before `net.to(device)` (line 6)" in out
    assert "__ddp_lint" not in out
