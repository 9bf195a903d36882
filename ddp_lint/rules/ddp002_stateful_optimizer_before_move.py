"""DDP002 stateful-optimizer-before-move (error)

## What it does
Finds an optimizer that already has state (Adagrad allocates it in `__init__`; any optimizer after
`optimizer.load_state_dict(...)` or `optimizer.step()`) when its model is then moved to another
device, cast to another dtype, or wrapped in FSDP with `use_orig_params=True`; and a model taken
back to the CPU (`.cpu()`, `.to("cpu")`) after its optimizer's state was made, when the optimizer
steps again before the model is moved back (in a loop, the next pass). A state moved tensor by tensor
to the model's new device right after the move (`state[k] = v.cuda()` over `optimizer.state`) follows
the model: no crash, and the order that is left is DDP101's.

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
method, or `locals()`) or changes what it is built from, with the reason. A model taken back to the
CPU is never fixed: building the optimizer after `.cpu()` would train on the CPU; the refusal says
to move the model back before the next step or to save a CPU copy of the weights.
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
        # back on the CPU to save, then on the device again before the next step
        "import torch\nopt = torch.optim.Adam(model.parameters())\nfor batch in data:\n    opt.step()\n"
        "    torch.save(model.cpu().state_dict(), 'm.pt')\n    model.cuda()\n",
        # back on the CPU once training is over
        "import torch\nopt = torch.optim.Adam(model.parameters())\nfor batch in data:\n    opt.step()\nmodel.cpu()\n",
    )
    INVALID = (
        "import torch\nopt = torch.optim.Adagrad(model.parameters())\nmodel.cuda()\n",
        "import torch\nopt = torch.optim.Adam(model.parameters())\nopt.load_state_dict(ckpt['opt'])\nmodel.to(device)\n",
        "import torch\nopt = torch.optim.Adam(model.parameters())\nopt.step()\nmodel.half()\n",
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "opt = torch.optim.Adagrad(model.parameters())\nmodel = FSDP(model, use_orig_params=True)\n",
        "import torch\nopt = torch.optim.Adam(model.parameters())\nfor batch in data:\n    opt.step()\n"
        "    torch.save(model.to('cpu').state_dict(), 'm.pt')\n",
    )

    def accepts(self, story: HolderStory, step: Step) -> bool:
        if step.placement.kind == cat.HOME:
            return step.state is not None and step.again is not None
        # a state moved after the model follows it (Adagrad's eager state too): the order stays DDP101's
        return step.state is not None or (story.holder.kind == cat.EAGER and step.state_moved is None)

    def message(self, story: HolderStory, step: Step, line_of: LineOf) -> str:
        holder = story.holder
        if step.placement.kind == cat.HOME:
            again = step.again.site
            when = (f"on line {line_of(again.node)}" if again.order > step.placement.site.order
                    else f"(line {line_of(again.node)}) on the loop's next pass")
            return (
                f"{holder_phrase(holder)} has state ({state_reason(holder, step, line_of)}) when "
                f"{where(step.placement, line_of)}{condition_phrase(holder.site, step)} takes its model back to the "
                f"CPU, and it steps again {when}: the state stays on the accelerator while the parameters are on "
                f"the CPU, so that step() crashes (\"Expected all tensors to be on the same device\"); move the "
                f"model back before the next step, or save a CPU copy of the weights instead of moving the model"
            )
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
