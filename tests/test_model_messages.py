"""Cause 4 of issue 27 (`fixtures/model/4_*`, `fixtures/projects/model_4_*`): a finding names objects
as the code does and quotes code on one line. Each case pins a few pieces of the message text (the
snapshot pins all of today's text, right or wrong; these pin what is right). A case whose fixture
carries an `# engine-v3: known ...` line (miss, false report, wrong message) runs as a strict xfail:
it fails today and turns into an error once the engine gets it right (delete the marker then)."""
import re
from pathlib import Path

import pytest

from ddp_lint.engine import lint_source
from ddp_lint.pipeline import process
from ddp_lint.settings import Selection, Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ALL = Settings(Selection(select=("ALL",)))
MARKER = re.compile(r"^#\s*engine-v3:\s*known ([a-z ]+)", re.MULTILINE)

# (fixture, project folder or None, reported line, code, texts the message must hold, texts it must not)
CASES = [
    ("model/4_pos_message_names_metric.py", None, 17, "DDP101",
     ["before `metric.to(device)`"], ["`module`"]),
    ("model/4_pos_message_multiline_condition.py", None, 8, "DDP101",
     ["cfg.use_apex and torch.cuda.is_available()"], ["\n", "(\n"]),
    ("model/4_pos_message_wrapper_line.py", None, 17, "DDP003",
     ["`ddp_model.double()`", "wrapped it on line 11"], ["wrapped it on line 12", "wrapped it on line 16"]),
    ("projects/model_4_pos_wrapper_line_via_helper/train.py", "projects/model_4_pos_wrapper_line_via_helper", 13, "DDP003",
     ["`ddp_model.half()`", "wrapped it on line 12"], ["wrapped it on line 14"]),
]


def _params():
    for case in CASES:
        path = FIXTURES / case[0]
        root = FIXTURES / case[1] if case[1] else None
        files = sorted(root.rglob("*.py")) if root else [path]
        reasons = [m.group(0).lstrip("# ") for f in files for m in [MARKER.search(f.read_text(encoding="utf-8"))] if m]
        marks = [pytest.mark.xfail(strict=True, reason=reasons[0])] if reasons else []
        yield pytest.param(*case, marks=marks, id=case[0])


@pytest.mark.parametrize("fixture, project, line, code, present, absent", list(_params()))
def test_message_names_things_as_the_code_does(fixture, project, line, code, present, absent):
    path = FIXTURES / fixture
    if project:
        findings = process(str(path), ALL, root=str(FIXTURES / project)).findings
    else:
        findings = lint_source(path.read_text(encoding="utf-8"), str(path), ALL)
    found = [f for f in findings if (f.line, f.code) == (line, code)]
    assert len(found) == 1, [(f.line, f.code) for f in findings]
    message = found[0].message.replace("\N{INVISIBLE SEPARATOR}", "")
    for text in present:
        assert text in message, message
    for text in absent:
        assert text not in found[0].message, message


@pytest.mark.parametrize("source, quoted", [
    ("(\n    cfg.use_apex  # the flag\n    and torch.cuda.is_available()\n)", "(cfg.use_apex and torch.cuda.is_available())"),
    ("f(\n    a,\n    'x # not a comment',\n)", "f(a, 'x # not a comment',)"),
    ("a  and  b", "a  and  b"),
])
def test_quoted_code_is_one_line_as_written(source, quoted):
    import libcst as cst

    from ddp_lint.analysis.names import code_text

    assert code_text(cst.parse_expression(source)) == quoted


TWO_ENDINGS = '''import torch
from apex import amp


def main(model, use_apex):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if use_apex:
        model, optimizer = amp.initialize(model, optimizer)
    if use_apex:
        model, optimizer = amp.initialize(model, optimizer)
    model.cuda()
    return optimizer
'''


def test_two_endings_under_one_condition_are_said_once():
    [finding] = lint_source(TWO_ENDINGS, "two_endings.py")
    assert finding.message.count("unless `use_apex`") == 1, finding.message
