"""Properties of `--fix` over generated training scripts: it parses, it is idempotent, it leaves no
fixable finding, and apart from retargets it only reorders lines.

`DDP_LINT_SOAK=10000 pytest tests/test_fix_properties.py` runs the soak mode (outside CI).
"""
import os
from collections import Counter

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings

from ddp_lint.engine import lint_source
from ddp_lint.fixer.apply import fix_source, fixable
from ddp_lint.prefilter import stage_decisions
from ddp_lint.settings import Selection, Settings

from programs.training_scripts import scripts

# hypothesis draws hundreds of programs
pytestmark = pytest.mark.slow

ALL = Settings(Selection(select=("ALL",)))
EXAMPLES = int(os.environ.get("DDP_LINT_SOAK", "220"))
PROFILE = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=EXAMPLES < 1000)


def _lines(text):
    return Counter(line.strip() for line in text.splitlines() if line.strip())


@PROFILE
@given(scripts())
def test_fix_is_a_parsing_idempotent_pure_reorder_that_leaves_nothing_fixable(source):
    result = fix_source(source, unsafe=True, settings=ALL)
    cst.parse_module(result.source)
    again = fix_source(result.source, unsafe=True, settings=ALL)
    assert again.source == result.source
    assert fixable(lint_source(result.source, settings=ALL), unsafe=True) == []
    before, after = _lines(source), _lines(result.source)
    if before != after:
        # Only a retarget may change a line: the moved constructor now names the wrapper.
        changed = (before - after) + (after - before)
        assert all("optim." in line for line in changed), changed
    # The prefilter is sound: whatever the full analysis finds, each of its stages lets through.
    if lint_source(source, settings=ALL, prefilter=False):
        assert stage_decisions(source, with_wraps=True) == {"text": True, "code": True, "tree": True}
