"""DDP103 optimizer-before-fsdp-orig-params (warning)

## What it does
Finds an optimizer without state built before `FullyShardedDataParallel(model, use_orig_params=True)`.

## Why is this bad?
With `use_orig_params=True` FSDP keeps the original parameter objects but makes their data flat
shards. An optimizer whose state is created lazily survives; one with state (Adagrad, a loaded
checkpoint) crashes at the first step because its state keeps the full shapes.
The order is fragile.

When the keyword comes from `**kwargs` or a variable, the analysis cannot tell which case it is and
reports this warning (not DDP001), naming the keyword in the message.

## Example
```python
opt = torch.optim.Adam(model.parameters())
model = FSDP(model, use_orig_params=True)
```

## Use instead
```python
model = FSDP(model, use_orig_params=True)
opt = torch.optim.Adam(model.parameters())
```

## Fix safety
`--fix` moves the optimizer after the wrapper. Safe when nothing between reads it or changes what
it reads; unsafe when a state load moves with it (a state saved for the full parameters must be
converted with `FSDP.optim_state_dict_to_load` once the parameters are shards).
"""
from ..analysis.stories import HolderStory, Step
from .base import HolderRule, LineOf, holder_phrase, where


class OptimizerBeforeFsdpOrigParams(HolderRule):
    code = "DDP103"
    VALID = (
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nmodel = FSDP(model, use_orig_params=True)\nopt = torch.optim.Adam(model.parameters())\n",
    )
    INVALID = (
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nopt = torch.optim.Adam(model.parameters())\nmodel = FSDP(model, use_orig_params=True)\n",
    )

    def accepts(self, story: HolderStory, step: Step) -> bool:
        # an average that deep-copied the model keeps its own parameters, whatever FSDP does
        return not story.holder.copies

    def message(self, story: HolderStory, step: Step, line_of: LineOf) -> str:
        keyword = step.placement.unknown_keyword
        if keyword:
            return (
                f"{holder_phrase(story.holder)} is built before {where(step.placement, line_of)}, whose "
                f"`{keyword}` is not visible here: with True, Adagrad or a loaded state crashes at step() "
                f"because FSDP turns the parameters into flat shards; with False (the default), FSDP replaces "
                f"the parameters and the optimizer trains nothing; build it after wrapping"
            )
        return (
            f"{holder_phrase(story.holder)} is built before {where(step.placement, line_of)} with "
            f"use_orig_params=True: fine while it has no state, but Adagrad or a loaded state crashes at step() "
            f"because FSDP turns the parameters into flat shards; build it after wrapping"
        )
