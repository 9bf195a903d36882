"""DDP101 optimizer-before-move (warning)

## What it does
Finds an optimizer (or EMA helper) without state built on a model's parameters before that model
is moved to a device (`.cuda()`, `.to(device)`) or cast (`.half()`, `.to(torch.bfloat16)`). The
case PyTorch Lightning fixed in its DDP backend (PR #2904).

## Why is this bad?
It works today only because the move keeps the parameter objects and the optimizer has no state
yet. It breaks as soon as any of that changes: on XLA (the move makes new parameters: silent
no-training), under the overwrite-on-conversion flag, when the optimizer is switched to Adagrad,
or when a checkpoint load slips in between (crash at the first step). PyTorch, Lightning and
every tutorial use the other order: build, move, wrap, then the optimizer.

## Example
```python
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.cuda()
```

## Use instead
```python
model.cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
```

## Fix safety
`--fix` moves the optimizer statement (and the scheduler, EMA and state loads built on it) after
the move. Safe when nothing between the two points reads the optimizer (directly, or through a
function, closure, method or `locals()`: then refused) and nothing changes what its constructor
reads (`params.clear()`, `args.lr = ...`: refused; the list handed to an unknown call: unsafe).
An EMA copy moves after the device move, not after a later wrap, so it copies the module.
"""
from ..analysis.stories import HolderStory, Step
from .. import catalog as cat
from .base import HolderRule, LineOf, condition_phrase, holder_phrase, models_phrase, where


class OptimizerBeforeMove(HolderRule):
    code = "DDP101"
    VALID = (
        "import torch\nfrom torch.optim.swa_utils import AveragedModel\nswa = AveragedModel(model, device=device)\nmodel.to(device)\n",
        "import torch\nmodel.cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x, y in loader:\n    x = x.to(device)\n",
        "import torch\nopt = torch.optim.SGD(net_d.parameters(), lr=0.1)\nnet_g.cuda()\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel, opt = accelerator.prepare(model, opt)\n",
    )
    INVALID = (
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.cuda()\n",
        "import torch.optim as optim\nopt = optim.Adam(model.parameters())\nmodel = model.to(device)\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nif args.cuda:\n    model.cuda()\n",
        "import torch\nclass T:\n    def __init__(self, model):\n        self.model = model\n        self.opt = torch.optim.Adam(self.model.parameters())\n    def setup(self):\n        self.model.half()\n",
    )

    def accepts(self, story: HolderStory, step: Step) -> bool:
        # `AveragedModel(model, device=device)` put its copy on that device itself
        return not (story.holder.placed_copy and step.placement.kind == cat.MOVE)

    def message(self, story: HolderStory, step: Step, line_of: LineOf) -> str:
        holder = story.holder
        opening = (f"{holder_phrase(holder)} is built on {models_phrase(holder)}'s parameters before "
                   f"{where(step.placement, line_of)}{condition_phrase(holder.site, step)}")
        if step.state_moved is not None:
            return (
                f"{opening}: its state follows the model (moved on line {line_of(step.state_moved.site.node)}), "
                f"but the parameters it holds follow only while the move keeps them (it breaks on XLA and under "
                f"the overwrite-on-conversion flag); build it after the move, then load its state"
            )
        return (
            f"{opening}: this works only "
            f"while the optimizer has no state (it breaks on XLA, with Adagrad, under the overwrite-on-conversion "
            f"flag, or once a checkpoint is loaded in between); build it after the move"
        )
