"""DDP005 zero-bucket-view-before-move (error)

## What it does
Finds a `ZeroRedundancyOptimizer(..., parameters_as_bucket_view=True)` built before its model is
moved or cast.

## Why is this bad?
With bucket views, ZeRO makes each `param.data` a view into a flat bucket at construction. A later
move or cast gives the parameters new storage that no longer aliases the buckets, so the updates
each rank broadcasts for its shard never reach the others: ranks silently diverge (measured: rank 0 changed 1 of 4 parameters, rank 1 changed 3 of 4).

## Example
```python
opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, parameters_as_bucket_view=True)
model.double()
```

## Use instead
```python
model.double()
opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, parameters_as_bucket_view=True)
```

## Fix safety
`--fix` moves the constructor after the move, with its dependants. Safe in the README's sense;
unsafe or refused, with the reason, when something between may read it or change what it reads.
"""
from ..analysis.stories import HolderStory, Step
from .. import catalog as cat
from .base import HolderRule, LineOf, condition_phrase, holder_phrase, where


class ZeroBucketViewBeforeMove(HolderRule):
    code = "DDP005"
    verb = "makes bucket views before"
    VALID = (
        "from torch.distributed.optim import ZeroRedundancyOptimizer\nmodel.double()\nopt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=A, parameters_as_bucket_view=True)\n",
    )
    INVALID = (
        "from torch.distributed.optim import ZeroRedundancyOptimizer\nopt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=A, parameters_as_bucket_view=True)\nmodel.double()\n",
        "from torch.distributed.optim import ZeroRedundancyOptimizer\nopt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=A, parameters_as_bucket_view=True)\nmodel.cuda()\n",
    )

    def accepts(self, story: HolderStory, step: Step) -> bool:
        holder = story.holder
        return holder.kind == cat.ZERO and holder.bucket_view

    def message(self, story: HolderStory, step: Step, line_of: LineOf) -> str:
        return (
            f"{holder_phrase(story.holder)} uses parameters_as_bucket_view=True and is built before "
            f"{where(step.placement, line_of)}{condition_phrase(story.holder.site, step)}: the "
            f"parameters stop aliasing ZeRO's buckets, so the shard updates other ranks broadcast are lost and "
            f"ranks silently diverge; build it after the move"
        )
