"""DDP002 stateful-optimizer-before-move (error)

## What it does
Finds an optimizer that already has state (Adagrad allocates it in `__init__`; any optimizer after
`optimizer.load_state_dict(...)` or `optimizer.step()`) when its model is then moved to another
device, cast to another dtype, or wrapped in FSDP with `use_orig_params=True`.

## Why is this bad?
`Module.to()` / `.cuda()` / `.half()` move the parameters in place but never the optimizer state.
The next `step()` crashes ("Expected all tensors to be on the same device", "expected dtype float
... but got double") or, with Adagrad and SGD momentum after a cast, silently mixes precisions.
This is the classic "resume from checkpoint fails on GPU" bug.

## Example
```python
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(checkpoint["optimizer"])
model.cuda()
```

## Use instead
```python
model.cuda()
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(checkpoint["optimizer"])  # state is cast to the parameters' device here
```

## Fix safety
`--fix` moves the optimizer, its `load_state_dict` and dependants after the move, so the state
is created or loaded on the moved parameters, as the original meant. Safe in the README's sense;
refused when something between reads the optimizer (directly, through a function, closure or
method, or `locals()`) or changes what it is built from, with the reason.
"""
from ..analysis.stories import HolderStory, Step
from .. import catalog as cat
from .base import HolderRule, LineOf, condition_phrase, holder_phrase, state_reason, where


class StatefulOptimizerBeforeMove(HolderRule):
    code = "DDP002"
    verb = "has state before"
    VALID = (
        "import torch\nmodel.cuda()\nopt = torch.optim.Adagrad(model.parameters())\n",
        "import torch\nmodel.cuda()\nopt = torch.optim.Adam(model.parameters())\nopt.load_state_dict(ckpt['opt'])\n",
    )
    INVALID = (
        "import torch\nopt = torch.optim.Adagrad(model.parameters())\nmodel.cuda()\n",
        "import torch\nopt = torch.optim.Adam(model.parameters())\nopt.load_state_dict(ckpt['opt'])\nmodel.to(device)\n",
        "import torch\nopt = torch.optim.Adam(model.parameters())\nopt.step()\nmodel.half()\n",
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "opt = torch.optim.Adagrad(model.parameters())\nmodel = FSDP(model, use_orig_params=True)\n",
    )

    def accepts(self, story: HolderStory, step: Step) -> bool:
        return story.holder.kind == cat.EAGER or step.state is not None

    def message(self, story: HolderStory, step: Step, line_of: LineOf) -> str:
        holder = story.holder
        if step.placement.kind == cat.FSDP_ORIG:
            outcome = "its state keeps the full parameter shapes while FSDP turns the parameters into flat shards, so the next step() crashes"
        else:
            outcome = (
                "the state stays on the old device/dtype, so the next step() crashes "
                "(or, for Adagrad and SGD momentum after a cast, silently mixes precisions)"
            )
        return (
            f"{holder_phrase(holder)} has state ({state_reason(holder, step, line_of)}) before "
            f"{where(step.placement, line_of)}{condition_phrase(holder.site, step)}: {outcome}; "
            f"move the model first, then build the optimizer and load its state"
        )
