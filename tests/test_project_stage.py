"""The project stage of the prefilter and the memos under it: the same decisions and answers as
without them (a memo answers for one text, one name and its roots; a changed text is read afresh)."""
import ast

import pytest

from ddp_lint import syntax
from ddp_lint.prefilter import project_could_match
from ddp_lint.project.index import ProjectIndex
from ddp_lint.project.modules import Resolver
from ddp_lint.settings import Settings

# The holder and the placement sit in two functions that never meet, unless `ready()` holds or places.
CALLER = """import torch
from helpers import ready

def build(model):
    return torch.optim.SGD(model.parameters(), lr=0.1)

def move(model):
    if ready():
        model.cuda()
"""


def _stage(tmp_path, helpers: str) -> bool:
    (tmp_path / "helpers.py").write_text(helpers)
    (tmp_path / "train.py").write_text(CALLER)
    index = ProjectIndex([str(tmp_path)])
    index.begin()
    return project_could_match(CALLER, str(tmp_path / "train.py"), Settings(), index)


def test_a_predicate_spelled_like_an_optimizer_supplies_no_holder(tmp_path):
    # `_optim_ready` is a holder word to the text stage; the tree stage sees no call that builds one
    assert not _stage(tmp_path, "_optim_ready = True\n\ndef ready():\n    return _optim_ready\n")


@pytest.mark.parametrize("helpers", [
    "from utils import optimal_fft_length\n\ndef ready(model):\n    return optimal_fft_length(model.n)\n",
    "from optimum.onnx import export\n\ndef ready(model):\n    return export(model)\n",
])
def test_the_words_for_what_is_best_name_no_optimizer(tmp_path, helpers):
    # `optimal_...` and the `optimum` package are no optimizer factory to any stage
    assert not _stage(tmp_path, helpers)


def test_a_function_that_builds_one_supplies_the_holder(tmp_path):
    helpers = "import torch\n\ndef ready():\n    return torch.optim.Adam([torch.zeros(1)])\n"
    assert _stage(tmp_path, helpers)


# A definition whose block sets strings: blanked for the token stages (`x = " "`, `{ : 1}`), it no longer
# parses, and the tree stage used to give up and leave the token halves standing.
_NAMES_ONLY = """from enum import Enum

class OptimizerNames(str, Enum):
    ADAMW = "adamw"

def ready(name="adamw"):
    aliases = {"adam": "adamw"}
    chosen = OptimizerNames(aliases.get(name, name))
    return chosen.value == "adamw"
"""


def test_a_block_that_sets_strings_is_still_judged_by_the_tree_stage(tmp_path):
    # `OptimizerNames(...)` is a holder word to the text stage; the block as written builds none
    assert not _stage(tmp_path, _NAMES_ONLY)
    # and the same block with a real optimizer in it still supplies the holder
    builds = _NAMES_ONLY.replace("    return chosen", "    opt = torch.optim.AdamW([torch.zeros(1)])\n    return chosen")
    assert _stage(tmp_path, "import torch\n" + builds)


def test_the_methods_of_a_class_a_package_re_exports_are_asked(tmp_path):
    # `from pkg import Trainer`, two packages deep: `trainer.train(model)` moves the model after the
    # caller's optimizer; the class's constructor alone has neither half
    (tmp_path / "pkg" / "training").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.training import Trainer\n")
    (tmp_path / "pkg" / "training" / "__init__.py").write_text("from pkg.training.trainer import Trainer\n")
    (tmp_path / "pkg" / "training" / "trainer.py").write_text(
        "class Trainer:\n    def __init__(self, name='run'):\n        self.name = name\n\n"
        "    def train(self, model):\n        model.to('cuda')\n")
    caller = ("import torch\nfrom pkg import Trainer\n\n\ndef main(model):\n"
              "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    trainer = Trainer()\n    trainer.train(model)\n    opt.step()\n")
    (tmp_path / "main.py").write_text(caller)
    index = ProjectIndex([str(tmp_path)])
    index.begin()
    assert project_could_match(caller, str(tmp_path / "main.py"), Settings(), index)


_DECORATED = """import torch

class Helper:
    def ready(self):
        return True

    @torch.no_grad()
    def build(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.1)
"""


def test_a_method_ends_before_the_decorators_of_the_next_one():
    from ddp_lint.project.index import _definition_block, _method_block

    block = _definition_block(_DECORATED, "Helper")
    ready = _method_block(block, "ready")
    assert "no_grad" not in ready and ready.strip().endswith("return True")
    assert _method_block(block, "build").lstrip().startswith("def build")
    ast.parse("if True:\n" + ready)  # the block alone parses, as the tree stage asks it to


@pytest.mark.parametrize("helpers", [
    # `o.SGD` is a holder through the import alone, and that import is not at the margin
    ("try:\n    from torch import optim as o\nexcept ImportError:\n    o = None\n\n"
     "class Maker:\n    def __init__(self, model):\n        self.opt = o.SGD(model.parameters(), lr=0.1)\n"),
    # a method's block is judged too, not only a function's
    ("import torch\n\nclass Maker:\n    def __init__(self, model):\n"
     "        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"),
])
def test_a_constructor_that_builds_one_supplies_the_holder(tmp_path, helpers):
    # a file that builds no optimizer itself gets one from a constructor only
    (tmp_path / "helpers.py").write_text(helpers)
    caller = "from helpers import Maker\n\ndef train(model):\n    model.cuda()\n    return Maker(model)\n"
    index = ProjectIndex([str(tmp_path)])
    index.begin()
    assert project_could_match(caller, str(tmp_path / "train.py"), Settings(), index)


# A constructor that builds an optimizer and moves the model, and methods that do one each.
ENGINE = """import torch

class Engine:
    def __init__(self, model):
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.cuda()

    def build(self, model):
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def place(self, model):
        model.cuda()

def make_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.1)

def place(model):
    model.cuda()
"""


@pytest.mark.parametrize("body, expected", [
    # the constructor orders both halves itself: its module reports that pair, and the caller reports it
    # too in a run that does not check that module (shown then only: findings.shown_in_run)
    ("    return Engine(model)\n", True),
    ("    engine = Engine(model)\n    return engine.opt\n", True),
    # the caller orders two calls: a holder and a placement from two blocks
    ("    engine = Engine(model)\n    engine.build(model)\n    engine.place(model)\n", True),
    ("    opt = make_optimizer(model)\n    place(model)\n    return opt\n", True),
    ("    opt = make_optimizer(model)\n    return Engine(model), opt\n", True),
    ("    engine = Engine(model)\n    model.half()\n", True),  # its own placement after the holder
])
def test_a_pair_one_called_block_makes_alone_reaches_the_caller_too(tmp_path, body, expected):
    (tmp_path / "helpers.py").write_text(ENGINE)
    caller = "from helpers import Engine, make_optimizer, place\n\ndef train(model):\n" + body
    index = ProjectIndex([str(tmp_path)])
    index.begin()
    assert project_could_match(caller, str(tmp_path / "train.py"), Settings(), index) is expected


def test_a_kept_tree_answers_for_its_own_text_only():
    first = "a = 1\n"
    assert ast.dump(syntax.python_tree(first)) == ast.dump(ast.parse(first))
    second = "b = 2\n"  # another text, kept next: never the first's tree
    assert ast.dump(syntax.python_tree(second)) == ast.dump(ast.parse(second))
    changed = "".join(["a = ", "3\n"])  # a new text object, even with the first's length
    assert ast.dump(syntax.python_tree(changed)) == ast.dump(ast.parse(changed))
    assert syntax.python_tree(first) is syntax.python_tree(first)


def test_a_name_is_resolved_per_folder_where_a_sibling_shadows_it(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "util.py").write_text("def f():\n    pass\n")
    (tmp_path / "scripts" / "pkg").mkdir(parents=True)
    (tmp_path / "scripts" / "pkg" / "util.py").write_text("def f():\n    pass\n")  # a script's sibling comes first
    resolver = Resolver([str(tmp_path)])
    assert resolver.resolve("pkg.util.f", str(tmp_path / "run.py")) == (str(tmp_path / "pkg" / "util.py"), "f")
    shadowed = (str(tmp_path / "scripts" / "pkg" / "util.py"), "f")
    assert resolver.resolve("pkg.util.f", str(tmp_path / "scripts" / "run.py")) == shadowed
    assert resolver.resolve("pkg.util.f", str(tmp_path / "run.py")) == (str(tmp_path / "pkg" / "util.py"), "f")
    # the file itself is never the answer: the next shorter module is
    assert resolver.resolve("pkg.util.f", str(tmp_path / "pkg" / "util.py")) == (str(tmp_path / "pkg" / "__init__.py"), "util.f")


def test_a_namespace_package_is_found_from_inside_its_folder(tmp_path):
    # `ns/` has no `__init__.py`; `ns/torch/` is a package imported as `ns.torch`, checked from inside `ns/`
    package = tmp_path / "ns" / "torch" / "run"
    package.mkdir(parents=True)
    for folder in (tmp_path / "ns" / "torch", package):
        (folder / "__init__.py").write_text("")
    (package / "types.py").write_text("from typing import Union\nInstance = Union[int, str]\n")
    resolver = Resolver([str(tmp_path / "ns")])
    importer = str(package / "executor.py")
    assert resolver.resolve("ns.torch.run.types.Instance", importer) == (str(package / "types.py"), "Instance")
    assert resolver.resolve("other.thing", importer) is None  # only the namespace's own name


def test_the_folder_the_packaging_marks_is_a_root_wherever_the_check_starts(tmp_path):
    # colossalai's tests import `tests.test_shardformer.test_model._utils` where only `test_model/` has an
    # `__init__.py`: found from the project's root (its `setup.py`), also when the check runs from the
    # folder above it
    found = {}
    for name, marked in (("marked", True), ("unmarked", False)):
        project = tmp_path / name / "colossalai-0.3.6"
        helpers = project / "tests" / "test_shardformer" / "test_model"
        helpers.mkdir(parents=True)
        if marked:
            (project / "setup.py").write_text("")
        (helpers / "__init__.py").write_text("")
        (helpers / "_utils.py").write_text("def run():\n    pass\n")
        resolver = Resolver([str(tmp_path / name)])
        found[name] = resolver.resolve("tests.test_shardformer.test_model._utils.run", str(helpers / "test_bert.py"))
    assert found["marked"] == (str(tmp_path / "marked" / "colossalai-0.3.6" / "tests" / "test_shardformer" / "test_model"
                                   / "_utils.py"), "run")
    assert found["unmarked"] is None


def test_a_checked_file_s_calls_are_reused_for_its_text_on_disk_only(tmp_path):
    (tmp_path / "api.py").write_text("def fit(model, opt):\n    model.cuda()\n")
    caller = "from api import fit\n\ndef main(model, opt):\n    fit(model, opt)\n"
    (tmp_path / "caller.py").write_text(caller)
    key = (str(tmp_path / "api.py"), "fit")
    marked = (key, ("from the checked file's analysis",))

    stale = ProjectIndex([str(tmp_path)])
    stale.remember_calls(str(tmp_path / "caller.py"), caller.replace("main", "other"), [marked])
    assert marked not in stale.call_facts(key)  # another text than the file's: analysed from disk
    assert [fact[0] for fact in stale.call_facts(key)] == [key]

    fresh = ProjectIndex([str(tmp_path)])
    fresh.remember_calls(str(tmp_path / "caller.py"), caller, [marked])
    assert fresh.call_facts(key) == [marked]


FACTORY_CALLER = """from factory import make_backend

def train(model, optimizer):
    optimizer.step()
    backend = make_backend(model)
    backend.setup()
"""


@pytest.mark.parametrize("setup, expected", [("self.model.cuda()", True), ("self.model.train()", False)])
def test_a_called_factory_supplies_the_methods_of_the_classes_it_returns(tmp_path, setup, expected):
    # the placement half is in the returned class's method, two modules away, imported in the factory
    (tmp_path / "factory.py").write_text(
        "def make_backend(model):\n    from backends import Backend\n    return Backend(model)\n")
    (tmp_path / "backends.py").write_text(
        f"class Backend:\n    def __init__(self, model):\n        self.model = model\n\n"
        f"    def setup(self):\n        {setup}\n")
    index = ProjectIndex([str(tmp_path)])
    index.begin()
    assert project_could_match(FACTORY_CALLER, str(tmp_path / "train.py"), Settings(), index) is expected


def test_an_excerpt_keeps_imports_under_a_flag_and_over_a_backslash_not_prose():
    from ddp_lint.project.index import _excerpt

    text = ('"""Docs.\n\n    import the data first, then train\n"""\nif FLAG:\n    import torch\n'
            "from pkg.base import \\\n    Base\n\n\nclass Single(Base):\n    def setup(self):\n"
            "        self.model.to(torch.device('cuda'))\n")
    source, line_map = _excerpt(text, "Single")
    tree = ast.parse(source)  # the excerpt parses: the continued import is whole, the prose left out
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names}
    assert imported == {"torch", "Base"}
    assert line_map[1] == 6  # `import torch`, brought to the margin, keeps its line


def test_a_folder_named_no_identifier_is_no_package_whatever_it_holds(tmp_path):
    # a clone's folder (`Bert-Multi-Label/`) with an `__init__.py`: its `pybert/` is the top package
    clone = tmp_path / "Bert-Multi-Label"
    for folder in (clone, clone / "pybert", clone / "pybert" / "train"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text("")
    (clone / "pybert" / "common").mkdir()
    (clone / "pybert" / "common" / "tools.py").write_text("def model_device(n_gpu, model):\n    pass\n")
    resolver = Resolver([str(tmp_path)])
    importer = str(clone / "pybert" / "train" / "trainer.py")
    assert resolver.absolute("..common.tools.model_device", importer) == "pybert.common.tools.model_device"
    assert resolver.resolve("..common.tools.model_device", importer) == (
        str(clone / "pybert" / "common" / "tools.py"), "model_device")


def test_a_script_folder_inside_the_package_tree_is_on_the_path(tmp_path):
    # scripts in `code/` (itself holding an `__init__.py`) run from there: `code/loss/` imports `loss.vgg`
    code = tmp_path / "code"
    (code / "loss").mkdir(parents=True)
    for folder in (code, code / "loss"):
        (folder / "__init__.py").write_text("")
    (code / "loss" / "vgg.py").write_text("class VGG:\n    pass\n")
    resolver = Resolver([str(tmp_path)])
    assert resolver.resolve("loss.vgg.VGG", str(code / "loss" / "__init__.py")) == (str(code / "loss" / "vgg.py"), "VGG")
    assert resolver.resolve("missing.thing", str(code / "loss" / "__init__.py")) is None


def test_a_module_imported_by_a_literal_name_and_a_literal_getattr_are_read_in_the_text():
    from ddp_lint.project.index import _calls_through, _read_imports

    text = 'module = import_module("loss.adversarial")\nloss = getattr(module, "Adversarial")(args)\n'
    assert _read_imports(text) == {"module": "loss.adversarial"}
    assert _calls_through(text, ["module"]) == {("module", "Adversarial")}
    assert _read_imports('module = import_module(name)\n') == {}  # a name only the run knows


def test_the_benchmark_counts_the_files_only_the_project_stage_passes(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "project_stage.py"
    spec = importlib.util.spec_from_file_location("project_stage_benchmark", script)
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    # train.py moves the model a `Maker` built an optimizer on: only the project says so
    (tmp_path / "helpers.py").write_text("import torch\n\nclass Maker:\n    def __init__(self, model):\n"
                                         "        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)\n")
    (tmp_path / "train.py").write_text("from helpers import Maker\n\ndef main(model):\n"
                                       "    maker = Maker(model)\n    model.cuda()\n    return maker\n")
    (tmp_path / "other.py").write_text("def nothing():\n    return 1\n")
    passed, _ = benchmark.passed_by_the_project_stage(str(tmp_path))
    assert [Path(p).name for p in passed] == ["train.py"]
    assert benchmark.main(["--list", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "    train.py" in out and out.rstrip().endswith("1")


# A chain of calls across modules, each in a module of its own: the prefilter follows three calls from
# the definition a file calls, so the optimizer `Fourth()` builds lies one call beyond `First()`'s reach.
_CHAIN = {
    "one.py": "from two import second\n\nclass First:\n    def __init__(self):\n        self.parts = second()\n",
    "two.py": "from three import third\n\ndef second():\n    return third()\n",
    "three.py": "from four import Fourth\n\ndef third():\n    return Fourth()\n",
    "four.py": "from five import deep\n\nclass Fourth:\n    def __init__(self):\n        self.parts = deep()\n",
    "five.py": "import torch\n\ndef deep():\n    return torch.optim.Adam([torch.zeros(1)])\n",
}
_FAR = "from one import First\n\ndef move(model):\n    trainer = First()\n    model.cuda()\n    return trainer\n"
_NEAR = "from four import Fourth\n\ndef move(model):\n    trainer = Fourth()\n    model.cuda()\n    return trainer\n"


def test_a_file_gets_the_same_answer_whichever_file_was_asked_first(tmp_path):
    # The memo of a definition's halves is kept per depth: a definition first asked near the start of
    # a chain, with calls left to follow, must not answer for it when it is reached at the chain's end,
    # where the prefilter stops following (the answer then depended on the order files were checked).
    for name, text in {**_CHAIN, "far.py": _FAR, "near.py": _NEAR}.items():
        (tmp_path / name).write_text(text)

    def answers(order):
        index = ProjectIndex([str(tmp_path)])
        found = {}
        for name, text in order:
            index.begin()
            found[name] = project_could_match(text, str(tmp_path / name), Settings(), index)
        return found

    alone = answers([("far.py", _FAR)])["far.py"]
    assert answers([("near.py", _NEAR), ("far.py", _FAR)])["far.py"] == alone
    assert answers([("near.py", _NEAR)])["near.py"]  # `Fourth()` reaches `deep()` in one call
