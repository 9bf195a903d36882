"""DDP003 convert-after-wrap (error)

## What it does
Finds a model moved or cast (`.half()`, `.double()`, `.to(dtype)`, `.to(device)`, `.cuda()`) after
`DistributedDataParallel` wrapped it. Reported on the conversion. A move of a model that was already
moved before wrapping is taken as a no-op, and FSDP (which supports moving after wrapping) is not
flagged.

## Why is this bad?
DDP registers its all-reduce hooks on each parameter's gradient accumulator when it is built. A
later dtype or device change goes through `param.data = new`, which resets the accumulators: the
hooks are gone, gradients are no longer averaged, and the ranks silently train apart (the DDP docstring forbids changing parameters after wrapping).

## Example
```python
model = DDP(model, device_ids=[rank])
model.half()
```

## Use instead
```python
model.half()
model = DDP(model, device_ids=[rank])
```

## Fix safety
No automatic fix: moving a conversion before the wrapper changes what DDP broadcasts at
construction; reorder by hand.
"""
from typing import Iterator, Sequence

from ..analysis.events import ScopeEvents
from ..analysis.stories import HolderStory, conversions_after_wrap
from .base import LineOf, NodeRef, Rule, RuleHit, placement_phrase, placement_text, short_code


class ConvertAfterWrap(Rule):
    code = "DDP003"
    VALID = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel.half()\nmodel = DDP(model)\n",
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel.to(rank)\nddp = DDP(model, device_ids=[rank])\nx = x.to(rank)\n",
        # FSDP1 supports moving after wrapping (its lazy init re-reads the device)
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nfsdp = FSDP(model)\nfsdp = fsdp.to('cuda')\n",
        # moved before wrapping: a later move to its device is a no-op
        "import torch\nm.cuda()\nm = torch.nn.parallel.DistributedDataParallel(m, device_ids=[r])\nm.to(r)\n",
    )
    INVALID = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\nmodel.half()\n",
        "from torch.nn.parallel import DistributedDataParallel as DDP\nddp = DDP(model)\nmodel.double()\n",
    )

    def check(self, scope: ScopeEvents, stories: Sequence[HolderStory], line_of: LineOf) -> Iterator[RuleHit]:
        for found in conversions_after_wrap(scope):
            if not (self.reads_placement(found.conversion) and self.reads_placement(found.wrap)):
                continue  # the table row, not the analysis, says which conversions and wrappers it reports
            wrap_line = line_of(found.wrap.site.node)
            message = (
                f"{placement_phrase(found.conversion)} converts the model after {found.wrap.label} wrapped it on "
                f"line {wrap_line}: the conversion resets the gradient accumulators that carry the wrapper's "
                f"all-reduce hooks, so gradients stop being synchronized and ranks silently train apart; "
                f"convert before wrapping"
            )
            related = [NodeRef(found.wrap.site.node, "wrap", f"wrapped by {found.wrap.label} here")]
            summary = (f"{short_code(placement_text(found.conversion))} converts the model after "
                       f"{short_code(found.wrap.label)} wrapped it (line {wrap_line})")
            yield RuleHit(self.code, found.conversion.site.statement, message, related, summary=summary,
                          placements=(found.wrap, found.conversion))
