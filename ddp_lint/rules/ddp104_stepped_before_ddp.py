"""DDP104 stepped-before-ddp (warning)

## What it does
Finds an optimizer that steps before `DistributedDataParallel` wraps its model.

## Why is this bad?
DDP broadcasts rank 0's parameters when it is built, but not the optimizer state. Moments built
by earlier, rank-local steps differ across ranks, so the ranks' updates differ and they silently
drift apart.

## Example
```python
optimizer.step()
model = DDP(model)
```

## Use instead
Wrap the model before the first step, and build the optimizer after wrapping.

## Fix safety
`--fix` moves the optimizer after the wrapper only when the step is not between the two points;
otherwise it refuses, because the step reads the optimizer.
"""
from ..analysis.stories import HolderStory, Step
from .base import HolderRule, LineOf, holder_phrase, where


class SteppedBeforeDdp(HolderRule):
    code = "DDP104"
    verb = "steps before"
    VALID = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nopt = torch.optim.Adam(model.parameters())\nmodel = DDP(model)\nopt.step()\n",
    )
    INVALID = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nopt = torch.optim.Adam(model.parameters())\nopt.step()\nmodel = DDP(model)\n",
    )

    def accepts(self, story: HolderStory, step: Step) -> bool:
        # the table offers every DDP-like wrapper; only DDP itself broadcasts the parameters at construction
        return step.placement.ddp and step.stepped is not None

    def message(self, story: HolderStory, step: Step, line_of: LineOf) -> str:
        return (
            f"{holder_phrase(story.holder)} steps on line {line_of(step.stepped.site.node)} before "
            f"{where(step.placement, line_of)}: DDP syncs parameters at construction but not optimizer state, "
            f"so rank-local state makes ranks silently diverge; wrap first, then step"
        )
