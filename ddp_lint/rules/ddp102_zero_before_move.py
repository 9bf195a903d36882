"""DDP102 zero-before-move (warning)

## What it does
Finds a `ZeroRedundancyOptimizer` built before its model is moved to a device.

## Why is this bad?
ZeRO freezes `_default_device` to the device of the first parameter at construction. Built on CPU
parameters and then used with NCCL after `.cuda()`, `consolidate_state_dict()` and `Join` send
CPU tensors through NCCL and fail (Lightning PR #11886, "ZeroRedundancyOptimizer
needs to have CUDA tensors"). With gloo it happens to work.

## Example
```python
opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam)
model.cuda(rank)
```

## Use instead
```python
model.cuda(rank)
opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam)
```

## Fix safety
`--fix` moves the constructor after the move, with its dependants. Safe in the README's sense;
unsafe or refused, with the reason, when something between may read it or change what it reads.
"""
from ..analysis.stories import HolderStory, Step
from .. import catalog as cat
from .base import HolderRule, LineOf, condition_phrase, holder_phrase, where


class ZeroBeforeMove(HolderRule):
    code = "DDP102"
    VALID = (
        "from torch.distributed.optim import ZeroRedundancyOptimizer\nmodel.cuda()\nopt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=A)\n",
    )
    INVALID = (
        "from torch.distributed.optim import ZeroRedundancyOptimizer\nopt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=A)\nmodel.cuda()\n",
    )

    def accepts(self, story: HolderStory, step: Step) -> bool:
        holder = story.holder
        return holder.kind == cat.ZERO and not holder.bucket_view

    def message(self, story: HolderStory, step: Step, line_of: LineOf) -> str:
        return (
            f"{holder_phrase(story.holder)} is built before {where(step.placement, line_of)}"
            f"{condition_phrase(story.holder.site, step)}: it freezes its default device at "
            f"construction, so consolidate_state_dict() and Join use CPU tensors and fail on NCCL; "
            f"build it after the move"
        )
