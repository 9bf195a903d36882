"""DDP201 optimizer-before-wrap (info, not selected by default)

## What it does
Finds an optimizer built before a wrapper that keeps the parameters: `DistributedDataParallel`,
`DataParallel`, `torch.compile`, `torch.jit.script`, `convert_sync_batchnorm`, parametrizations,
`spectral_norm`. Select it with `--extend-select DDP201`. A `torch.compile` whose result is bound
beside the bare module (`model = torch.compile(original_model)`, the bare one kept for checkpoints,
whose keys the compiled module prefixes with `_orig_mod.`) is applied last on purpose and not flagged.

## Why is this bad?
It is not: these wrappers keep the parameter objects. It is the
non-canonical order, and the next edit (swapping DDP for FSDP, adding `.to(xla)`) makes it a bug.
Canonical order: build the model, move it, wrap it, build the optimizer, load its state.

## Example
```python
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model = DDP(model, device_ids=[rank])
```

## Use instead
```python
model = DDP(model, device_ids=[rank])
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
```

## Fix safety
`--fix` moves the optimizer after the wrapper; safe when nothing between reads it. Unsafe when
the optimizer comes from a function given the model itself (`self.build_optimizer(cfg, model)`,
timm's `create_optimizer_v2(model)`) and the wrap rebinds that name: after the move the function
receives the wrapper, whose parameter names start with `module.` and which lacks the model's own
methods. Unsafe too when a comment between says the order is wanted.
"""
from ..analysis.stories import HolderStory, Step
from .base import HolderRule, LineOf, condition_phrase, holder_phrase, where


class OptimizerBeforeWrap(HolderRule):
    code = "DDP201"
    VALID = (
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\ncompiled = torch.compile(model)\ntorch.save(model.state_dict(), path)\n",
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        "from timm.utils import ModelEmaV2\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nema = ModelEmaV2(model)\nmodel = DDP(model)\n",
    )
    INVALID = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel = DDP(model)\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel = torch.compile(model)\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.features = torch.nn.DataParallel(model.features)\n",
    )

    def accepts(self, story: HolderStory, step: Step) -> bool:
        # A deep-copying EMA (timm's ModelEma, AveragedModel) is built before DDP on purpose: the
        # wrapper cannot touch the copy. A compile bound beside the bare module, which keeps its name for
        # checkpoints (`model = torch.compile(original_model)`), is applied last on purpose.
        return not story.holder.copies and not step.placement.beside

    def message(self, story: HolderStory, step: Step, line_of: LineOf) -> str:
        return (
            f"{holder_phrase(story.holder)} is built before {where(step.placement, line_of)}"
            f"{condition_phrase(story.holder.site, step)}: harmless today, "
            f"but the canonical order is build the model, move it, wrap it, then build the optimizer and load its state"
        )
