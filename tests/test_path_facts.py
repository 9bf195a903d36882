"""Conditions that cannot hold together (issue 27, cause 3c): two events under contradictory guards in
one function never run on one path, a computed flag counting by its definition."""
import textwrap

import pytest

from ddp_lint.engine import lint_source
from ddp_lint.settings import Selection, Settings

ALL = Settings(Selection(select=("ALL",)))

PREPARE = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

def prepare(model, args, world_size, force):
    {flag}
    model = model.cuda(args.local_rank)
    if {wrap_test}:
        model = DDP(model, device_ids=[args.local_rank])
    if {cast_test}:
        model.half()
    return model
"""


@pytest.mark.parametrize("flag, wrap_test, cast_test, reported", [
    ("pass", "args.distributed", "args.fp16 and not args.distributed", False),
    ("pass", "args.distributed", "not (args.distributed or args.cpu)", False),  # `or` false: neither holds
    ("pass", "args.distributed", "args.fp16 or not args.distributed", True),  # `or` true says nothing
    ("use_ddp = world_size > 1 and not args.fp16", "use_ddp", "args.fp16", False),
    ("use_ddp = not args.fp16\n    if force:\n        use_ddp = True", "use_ddp", "args.fp16", True),  # rebound
    ("pass", "args.distributed", "args.fp16", True),
])
def test_contradictory_guards_never_share_a_path(flag, wrap_test, cast_test, reported):
    source = textwrap.dedent(PREPARE).format(flag=flag, wrap_test=wrap_test, cast_test=cast_test)
    codes = [f.code for f in lint_source(source, "t.py", ALL)]
    assert ("DDP003" in codes) is reported, codes
