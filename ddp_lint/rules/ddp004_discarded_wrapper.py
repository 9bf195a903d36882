"""DDP004 discarded-wrapper (error)

## What it does
Finds `DistributedDataParallel(model, ...)` or `FullyShardedDataParallel(model, ...)` called as a
bare statement, its result thrown away, when the bare module is called afterwards in the same scope.

## Why is this bad?
The wrapper is what synchronizes gradients; building it and then training the bare module runs
without any all-reduce, so each rank trains its own model (semantics row 16). `fully_shard` is
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
from .base import ERROR, LineOf, Rule, RuleHit


class DiscardedWrapper(Rule):
    code = "DDP004"
    name = "discarded-wrapper"
    severity = ERROR
    VALID = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\nloss = model(x)\n",
        # a test that only checks the constructor trains nothing afterwards
        "import torch\nwith pytest.raises(ValueError):\n    torch.nn.parallel.DistributedDataParallel(model)\n",
    )
    INVALID = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\nDDP(model, device_ids=[0])\nloss = model(x)\n",
        "import torch\ntorch.nn.parallel.DistributedDataParallel(model)\nfor x in loader:\n    model(x).sum().backward()\n",
    )

    def check(self, scope: ScopeEvents, stories: Sequence[HolderStory], line_of: LineOf) -> Iterator[RuleHit]:
        for event in discarded_wrappers(scope):
            model = event.handle.text if event.handle is not None else "model"
            message = (
                f"the {event.label} built here is discarded: training `{model}` directly runs without gradient "
                f"synchronization, so ranks silently diverge; keep the wrapper (`{model} = {event.label}({model}, ...)`) "
                f"and train through it"
            )
            yield RuleHit(self.code, event.site.statement, message)
