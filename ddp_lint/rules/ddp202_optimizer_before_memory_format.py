"""DDP202 optimizer-before-memory-format (info, not selected by default)

## What it does
Finds an optimizer built before its model's memory format changes: `model.to(memory_format=
torch.channels_last)` or `nn.utils.convert_conv2d_weight_memory_format(model, ...)`. Select it with
`--extend-select DDP202`.

## Why is this bad?
It is not, today: the conversion keeps the parameter objects, and state created
at the first step follows the new layout. It is the non-canonical order: state loaded before the
conversion keeps the old layout, and under `set_overwrite_module_params_on_conversion(True)` the
conversion makes new parameters (then DDP001 reports it). Canonical order: build the model, move
it, convert its layout, wrap it, build the optimizer, load its state.

## Example
```python
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model = model.to(memory_format=torch.channels_last)
```

## Use instead
```python
model = model.to(memory_format=torch.channels_last)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
```

## Fix safety
`--fix` moves the optimizer after the conversion; safe when nothing between reads it or changes
what it reads (see the README's "Fix safety").
"""
from ..analysis.stories import HolderStory, Step
from .base import HolderRule, LineOf, condition_phrase, holder_phrase, where


class OptimizerBeforeMemoryFormat(HolderRule):
    code = "DDP202"
    VALID = (
        "import torch\nmodel = model.to(memory_format=torch.channels_last)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nx = x.to(memory_format=torch.channels_last)\n",
    )
    INVALID = (
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel = model.to(memory_format=torch.channels_last)\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "torch.nn.utils.convert_conv2d_weight_memory_format(model, torch.channels_last)\n",
    )

    def accepts(self, story: HolderStory, step: Step) -> bool:
        return True  # any layout change its table row lets through

    def message(self, story: HolderStory, step: Step, line_of: LineOf) -> str:
        return (
            f"{holder_phrase(story.holder)} is built before {where(step.placement, line_of)}"
            f"{condition_phrase(story.holder.site, step)}: harmless today (the parameters stay the same objects), "
            f"but state loaded before keeps the old layout; convert the model's layout, then build the optimizer"
        )
