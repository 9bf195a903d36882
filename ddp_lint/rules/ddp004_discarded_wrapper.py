"""DDP004 discarded-wrapper (error)

## What it does
Finds `DistributedDataParallel(model, ...)` or `FullyShardedDataParallel(model, ...)` called as a
bare statement, its result thrown away, or bound to `_` or to a function's local name that nothing
reads (also as the position of a tuple a helper returns: `model, _ = setup(model)` where `setup`
returns `(module, DDP(module))`), when the bare module is called afterwards in the same scope or
handed, together with an optimizer, to a call that trains it (`train(model, optimizer)`).

## Why is this bad?
The wrapper is what synchronizes gradients; building it and then training the bare module runs
without any all-reduce, so each rank trains its own model. `fully_shard` is
in-place and is not flagged.

## Example
```python
DDP(model, device_ids=[rank])
```

## Use instead
```python
model = DDP(model, device_ids=[rank])
```

## Fix safety
No automatic fix: which name the training loop should use is the author's choice.
"""
from typing import Iterator, Sequence

from ..analysis.events import ScopeEvents
from ..analysis.stories import HolderStory, discarded_wrappers
from .base import LineOf, Rule, RuleHit, short_code


class DiscardedWrapper(Rule):
    code = "DDP004"
    VALID = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\nloss = model(x)\n",
        # a test that only checks the constructor trains nothing afterwards
        "import torch\nwith pytest.raises(ValueError):\n    torch.nn.parallel.DistributedDataParallel(model)\n",
        # handing the bare module over without an optimizer may only log or save it
        "import torch\ntorch.nn.parallel.DistributedDataParallel(model)\nlog_model(model)\n",
        # a call that manages the model and its optimizer together is not the training loop
        "import torch\ntorch.nn.parallel.DistributedDataParallel(model)\nopt = torch.optim.SGD(model.parameters())\n"
        "model, opt = accelerator.prepare(model, opt)\n",
        # the wrapper kept: the loop trains through it
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nopt = torch.optim.SGD(model.parameters())\n"
        "model = DDP(model)\ntrain(model, opt)\n",
        # the helper's tuple keeps the wrapper under a name; `_` is the bare module
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\ndef setup(m):\n    ddp = DDP(m)\n"
        "    return ddp, ddp.module\n\ndef main(m):\n    m, _ = setup(m)\n    opt = torch.optim.SGD(m.parameters())\n"
        "    train(m, opt)\n",
    )
    INVALID = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\nDDP(model, device_ids=[0])\nloss = model(x)\n",
        "import torch\ntorch.nn.parallel.DistributedDataParallel(model)\nfor x in loader:\n    model(x).sum().backward()\n",
        # the training loop in a helper, handed the bare module and its optimizer
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nfrom loops import train\n"
        "model = Net().cuda()\nDDP(model, device_ids=[0])\nopt = torch.optim.SGD(model.parameters())\ntrain(model, opt)\n",
        # a helper returns (module, wrapper) and the caller throws the wrapper away
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\ndef setup(m):\n    ddp = DDP(m)\n"
        "    return ddp.module, ddp\n\ndef main(m):\n    m, _ = setup(m)\n    opt = torch.optim.SGD(m.parameters())\n"
        "    train(m, opt)\n",
    )

    def check(self, scope: ScopeEvents, stories: Sequence[HolderStory], line_of: LineOf) -> Iterator[RuleHit]:
        for event in discarded_wrappers(scope):
            model = event.handle.text if event.handle is not None else "model"
            if event.name:
                fate = "and thrown away" if event.name == "_" else "and never read"
                message = (
                    f"the {event.label} wrapper of `{model}` made here is bound to `{event.name}` {fate}: training "
                    f"`{model}` directly runs without gradient synchronization, so ranks silently diverge; train "
                    f"through the wrapper"
                )
            else:
                message = (
                    f"the {event.label} built here is discarded: training `{model}` directly runs without gradient "
                    f"synchronization, so ranks silently diverge; keep the wrapper (`{model} = {event.label}({model}, ...)`) "
                    f"and train through it"
                )
            summary = f"the {short_code(event.label)} wrapper of {short_code(model)} is discarded"
            yield RuleHit(self.code, event.site.statement, message, summary=summary)
