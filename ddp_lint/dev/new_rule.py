"""`new-rule`: a new rule is one command and one file to fill in. It writes the rule module (docs with
ruff's sections, VALID/INVALID examples, an `accepts()` to write), its row in `rules/table.py`,
`fixtures/<CODE>/` with a case that must not fire, that folder's snapshot and the README's row.

The rule is written as a draft: `accepts()` returns False, so it fires nowhere and every other test
keeps passing, and its `draft` line makes its INVALID examples strict xfails (tests/test_rule_examples.py),
so the day `accepts()` makes them fire the suite says to delete that line.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from string import Template
from typing import Dict, List, Optional, Sequence, Tuple

from .. import catalog as cat
from ..rules.table import RULE_TABLE

ROOT = Path(__file__).resolve().parent.parent.parent  # the checkout holding the ddp_lint package

_CODE = re.compile(r"^DDP\d{3}$")
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
_SEVERITY_OF_FAMILY = {"0": "error", "1": "warning", "2": "info"}

# One placement of each kind a rule can read, as the examples and the fixture spell it: (imports, line).
# `home` is left out: no rule reports a model going back to the CPU.
_PLACEMENTS: Dict[str, Tuple[Tuple[str, ...], str]] = {
    cat.MOVE.value: ((), "model.cuda()"),
    cat.CAST.value: ((), "model.half()"),
    cat.REPLACE.value: ((), "model.to_empty(device='cuda')"),
    cat.FSDP_ORIG.value: (("from torch.distributed.fsdp import FullyShardedDataParallel as FSDP",),
                          "model = FSDP(model, use_orig_params=True)"),
    cat.WRAP.value: ((), "model = torch.compile(model)"),
    cat.LAYOUT.value: ((), "model = model.to(memory_format=torch.channels_last)"),
    cat.SYNC_WRAPPER: (("from torch.nn.parallel import DistributedDataParallel as DDP",), "model = DDP(model)"),
}
READABLE_KINDS: Tuple[str, ...] = tuple(_PLACEMENTS)
_OPTIMIZER = "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)"


class NewRuleError(Exception):
    """Why the rule cannot be added (one line); nothing was written."""


def add_rule(code: str, name: str, severity: Optional[str] = None, reads: Sequence[str] = ("move",),
             root: Path = ROOT) -> List[str]:
    """Writes the draft rule `code` `name` into the checkout at `root`; returns the paths written,
    relative to it: the module, the table, the fixture, the snapshot, the README."""
    severity = _checked(code, name, severity, reads)
    if not (root / "README.md").is_file() or not (root / "fixtures").is_dir():
        raise NewRuleError(f"{root} is not a ddp-lint checkout (an installed package has no README.md and fixtures/)")
    module = root / "ddp_lint" / "rules" / f"{code.lower()}_{name.replace('-', '_')}.py"
    table = root / "ddp_lint" / "rules" / "table.py"
    fixture = root / "fixtures" / code / "canonical_order_ok.py"
    snapshot = root / "tests" / "snapshots" / f"{code}.snap"
    readme = root / "README.md"
    # Every target is checked before anything is written: a refused run leaves the tree as it was.
    existing = [p for p in (module, fixture.parent, snapshot) if p.exists()]
    existing += sorted(module.parent.glob(f"{code.lower()}_*.py"))
    if existing:
        raise NewRuleError(f"{existing[0].relative_to(root)} exists already; new-rule writes only new files")
    table_text = _with_table_row(table.read_text(encoding="utf-8"), code, name, severity, reads)
    readme_text = _with_readme_row(readme.read_text(encoding="utf-8"), code, name, severity)

    module.write_text(_module_text(code, name, severity, reads), encoding="utf-8")
    table.write_text(table_text, encoding="utf-8")
    fixture.parent.mkdir(parents=True)
    fixture.write_text(_fixture_text(code, name, reads), encoding="utf-8")
    snapshot.write_text(_EMPTY_SNAPSHOT, encoding="utf-8")
    readme.write_text(readme_text, encoding="utf-8")
    return [str(p.relative_to(root)) for p in (module, table, fixture, snapshot, readme)]


def _checked(code: str, name: str, severity: Optional[str], reads: Sequence[str]) -> str:
    """The rule's severity, once the arguments are known to be good."""
    if not _CODE.match(code):
        raise NewRuleError(f"{code!r} is not a rule code: DDP and three digits, e.g. DDP106")
    if code in RULE_TABLE:
        raise NewRuleError(f"{code} is in rules/table.py already ({RULE_TABLE[code].name})")
    family = _SEVERITY_OF_FAMILY.get(code[3])
    if family is None:
        raise NewRuleError(f"{code}: the hundreds digit is the severity, 0 (error), 1 (warning) or 2 (info)")
    if severity is not None and severity != family:
        raise NewRuleError(f"{code} is a {family} code (DDP{code[3]}xx); {severity} rules are numbered "
                           f"DDP{next(d for d, s in _SEVERITY_OF_FAMILY.items() if s == severity)}xx")
    if not _NAME.match(name):
        raise NewRuleError(f"{name!r} is not a kebab-case name, e.g. optimizer-before-compile")
    taken = [c for c, info in RULE_TABLE.items() if info.name == name]
    if taken:
        raise NewRuleError(f"{taken[0]} is named {name} already")
    if not reads:
        raise NewRuleError("--reads names no kind")
    unknown = [kind for kind in reads if kind not in _PLACEMENTS]
    if unknown:
        raise NewRuleError(f"--reads: {unknown[0]!r} is not a kind a rule reads ({', '.join(READABLE_KINDS)})")
    return family


# ----- rules/table.py and README.md: one row each, in code order ------------------------------------
_TABLE_ROW = re.compile(r'^    "(DDP\d{3})": RuleInfo\(', re.MULTILINE)
_README_ROW = re.compile(r"^\| (DDP\d{3}) \|", re.MULTILINE)


def _kind_expression(kind: str) -> str:
    return "SYNC_WRAPPER" if kind == cat.SYNC_WRAPPER else f"cat.{cat.PlacementKind(kind).name}"


def _with_table_row(text: str, code: str, name: str, severity: str, reads: Sequence[str]) -> str:
    kinds = ", ".join(_kind_expression(kind) for kind in reads)
    row = f'    "{code}": RuleInfo("{name}", {severity.upper()}, _reads({kinds})),\n'
    rows = list(_TABLE_ROW.finditer(text))
    if not rows:
        raise NewRuleError("rules/table.py has no RULE_TABLE rows to insert into")
    later = [m for m in rows if m.group(1) > code]
    if later:
        at = _above_comments(text, later[0].start())
    else:  # after the last row, which may span lines: before the table's closing brace
        at = text.index("\n}", rows[-1].start()) + 1
    return text[:at] + row + text[at:]


def _above_comments(text: str, at: int) -> int:
    """Where the comment lines just above a row start: they speak of that row, so a new one goes above them."""
    lines = text[:at].splitlines(keepends=True)
    while lines and lines[-1].lstrip().startswith("#"):
        at -= len(lines.pop())
    return at


def _with_readme_row(text: str, code: str, name: str, severity: str) -> str:
    shown = "info (opt-in)" if severity == "info" else severity
    row = f"| {code} | {name} | {shown} | TODO: what goes wrong at run time |\n"
    rows = list(_README_ROW.finditer(text))
    if not rows:
        raise NewRuleError("README.md has no rule table (rows `| DDPnnn | name | severity | outcome |`)")
    if any(m.group(1) == code for m in rows):
        raise NewRuleError(f"README.md lists {code} already")
    later = [m for m in rows if m.group(1) > code]
    at = later[0].start() if later else text.index("\n", rows[-1].start()) + 1
    return text[:at] + row + text[at:]


# ----- the new files -------------------------------------------------------------------------------
def _program(kind: str, bug: bool) -> str:
    imports, placement = _PLACEMENTS[kind]
    order = (_OPTIMIZER, placement) if bug else (placement, _OPTIMIZER)
    return "\n".join(("import torch", *imports, *order)) + "\n"


def _examples(reads: Sequence[str], bug: bool) -> str:
    return "".join(f"        {json.dumps(_program(kind, bug))},\n" for kind in reads)


_MODULE = Template('''"""$code $name ($severity_line)

## What it does
TODO: Finds an optimizer built before $placements.

## Why is this bad?
TODO: what goes wrong at run time, and how it shows (a crash, silent divergence, no training).

## Example
```python
$bug
```

## Use instead
```python
$fixed
```

## Fix safety
TODO: `--fix` moves the optimizer (with what depends on it) after the placement, as for every holder
rule; say when that is safe, unsafe or refused (see the README's "Fix safety").
"""
from ..analysis.stories import HolderStory, Step
from .base import HolderRule, LineOf, condition_phrase, holder_phrase, where


class $cls(HolderRule):
    code = "$code"
    # TODO: delete this line once accepts() is written: until then the INVALID examples must not fire.
    draft = "accepts() is not written yet"
    VALID = (
$valid    )
    INVALID = (
        # TODO: the bug this rule reports (it is offered only the placements its row in rules/table.py reads)
$invalid    )

    def accepts(self, story: HolderStory, step: Step) -> bool:
        # TODO: what, beyond the placement's kind (the table already checked it), makes this a bug:
        # the holder's kind, a state before the placement, a copy...
        return False

    def message(self, story: HolderStory, step: Step, line_of: LineOf) -> str:
        return (
            f"{holder_phrase(story.holder)} is built before {where(step.placement, line_of)}"
            f"{condition_phrase(story.holder.site, step)}: TODO what goes wrong; what to do instead"
        )
''')


def _module_text(code: str, name: str, severity: str, reads: Sequence[str]) -> str:
    first = reads[0]
    return _MODULE.substitute(
        code=code, name=name, cls="".join(part.capitalize() for part in name.split("-")),
        severity_line="info, not selected by default" if severity == "info" else severity,
        placements=" or ".join(f"`{_PLACEMENTS[kind][1]}`" for kind in reads),
        bug=f"{_OPTIMIZER}\n{_PLACEMENTS[first][1]}", fixed=f"{_PLACEMENTS[first][1]}\n{_OPTIMIZER}",
        valid=_examples(reads, bug=False), invalid=_examples(reads, bug=True),
    )


def _fixture_text(code: str, name: str, reads: Sequence[str]) -> str:
    imports = sorted({line for kind in reads for line in _PLACEMENTS[kind][0]})
    functions = "".join(
        f"\n\ndef build_after_{kind.replace('-', '_')}(model):\n"
        f"    {_PLACEMENTS[kind][1]}\n    {_OPTIMIZER}\n    return model, optimizer\n"
        for kind in reads
    )
    return (
        f'"""{code} {name}: the order it asks for, which no rule reports.\n\n'
        f"TODO: add the cases it reports, each reported line carrying an expect comment with {code}, and a\n"
        f'`.fixed.py` beside each case its fix rewrites (tests/test_fixtures.py reads both).\n"""\n'
        + "\n".join(("import torch", *imports)) + "\n" + functions
    )


# What tests/test_snapshots.py renders for a fixture folder without findings (a test runs it on a
# rule this command wrote, so the two cannot part).
_EMPTY_SNAPSHOT = (
    "# full text output\n\n\n# JSON findings and errors\n"
    + json.dumps({"findings": [], "errors": []}, indent=1, ensure_ascii=False) + "\n"
)
