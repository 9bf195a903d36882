"""The JSON/SARIF `fix.edit` of each finding: spliced into the source, it gives exactly what
rebuilding the whole module with that one fix gives, for block shapes where generating the changed
block alone could go wrong (comments and decorators above its first statement, a footer comment,
multi-line strings, tabs, CRLF, deep nesting)."""
import pytest

from ddp_lint.documents.python import PythonDocument, decode
from ddp_lint.engine import analyse_source
from ddp_lint.pipeline import wire
from ddp_lint.fixer.apply import apply_plans, fixable
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))

BODY = '''    # set-up
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    doc = """text
at column zero"""
    model.cuda()
    return opt
    # end of the body
'''

SOURCES = {
    "function": "import torch\n\n\ndef f():  # header comment\n" + BODY,
    "method_in_branch": "import torch\n\n\nclass T:\n    def f(self):\n        if ready:\n"
    + "".join("        " + line if line.strip() else line for line in BODY.splitlines(keepends=True)),
    "decorated_first_statement": "import torch\n\n\ndef outer():\n    @cache\n    # between\n    def helper():\n"
    "        return 1\n    model = Net()\n    opt = torch.optim.SGD(model.parameters())\n    model.half()\n    return opt\n",
    "tabs": "import torch\n\n\ndef f():\n\tmodel = Net()\n\topt = torch.optim.Adam(model.parameters())\n\tmodel.cuda()\n\treturn opt\n",
    "crlf": "import torch\r\n\r\n\r\ndef f():\r\n    model = Net()\r\n    opt = torch.optim.SGD(model.parameters())\r\n"
    "    sched = torch.optim.lr_scheduler.StepLR(opt, 1)\r\n    model.cuda()\r\n    return opt, sched\r\n",
    "module_level": "import torch\n\nmodel = Net()\nopt = torch.optim.SGD(model.parameters())\nmodel.cuda()\n",
    "two_in_one_file": "import torch\n\n\ndef a():\n" + BODY + "\n\ndef b():\n" + BODY,
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_edit_spliced_into_the_source_is_the_whole_module_rebuilt_with_that_fix(name):
    source = SOURCES[name]
    parsed = analyse_source(source, f"{name}.py", ALL)
    found = fixable(parsed.findings, unsafe=True)
    assert found, parsed.findings
    document = PythonDocument(f"{name}.py", decode(source.encode("utf-8")))
    for finding in found:
        edit = wire(finding, document, parsed, edits=True).fix.edit
        lines = source.splitlines(keepends=True)
        spliced = "".join(lines[: edit.line - 1] + [edit.content] + lines[edit.end_line:])
        assert spliced == apply_plans(parsed.module, [finding.plan])
        assert spliced != source
