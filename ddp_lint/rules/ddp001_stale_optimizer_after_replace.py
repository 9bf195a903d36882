"""DDP001 stale-optimizer-after-replace (error)

## What it does
Finds an optimizer (or EMA / ZeroRedundancyOptimizer) built on a model's parameters before an
operation that replaces those parameters with new objects: FSDP `FullyShardedDataParallel` (default
`use_orig_params=False`), `fully_shard`, `parallelize_module`, `to_empty` after meta init, a move to
an XLA device, `load_state_dict(..., assign=True)`, `model = copy.deepcopy(model)`, `model =
torch.load(path)` (an unpickled module has parameters of its own, also when `setattr` sets it from a
set of saved names), `weight_norm`, `prepare_qat`/`fuse_modules` without `inplace=True`, reassigning a
submodule, or any conversion under `torch.__future__.set_overwrite_module_params_on_conversion(True)`.

## Why is this bad?
The optimizer keeps references to the old parameter objects. After the replacement the model
trains with new ones, so `optimizer.step()` updates tensors nobody uses: no error, the loss does
not improve, the model silently never trains (measured: 0 of 4 parameters change).

## Example
```python
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
fully_shard(model)
```

## Use instead
```python
fully_shard(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
```

## Fix safety
`--fix` moves the optimizer statement, with the scheduler, EMA and state loads that depend on it,
to just after the replacement. Where the wrapper gets a new name (`fsdp = FSDP(model)`) the moved
constructor is pointed at the wrapper's parameters. Safe in the README's sense (nothing between the
two points reads what moves or changes what it reads). Unsafe when a state load moves after a
sharding wrapper (FSDP, `fully_shard`, `parallelize_module`: the saved state no longer matches the
flat or sharded parameters and must be converted with the wrapper's API), when the optimizer comes
from a function given the model that would now receive the wrapper, or when a comment says the order
matters. Refused when the optimizer takes a parameter list built before the replacement.
"""
from ..analysis.stories import HolderStory, Step
from .base import HolderRule, LineOf, condition_phrase, holder_phrase, model_names, models_phrase, where


class StaleOptimizerAfterReplace(HolderRule):
    code = "DDP001"
    verb = "is left stale by"
    VALID = (
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nfrom torch.optim.swa_utils import AveragedModel\n"
        "swa = AveragedModel(model)\nmodel = FSDP(model)\n",
        "from torch.distributed.fsdp import fully_shard\nimport torch\nfully_shard(model)\nopt = torch.optim.Adam(model.parameters())\n",
        "import copy, torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nema = copy.deepcopy(model)\n",
        "import torch\nwith torch.device('meta'):\n    model = Net()\nfully_shard(model)\nopt = torch.optim.Adam(model.parameters())\nmodel.to_empty(device='cuda')\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nckpt = torch.load(path)\nmodel.load_state_dict(ckpt)\n",
    )
    INVALID = (
        "from torch.distributed.fsdp import fully_shard\nimport torch\nopt = torch.optim.Adam(model.parameters())\nfully_shard(model)\n",
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nopt = torch.optim.Adam(model.parameters())\nmodel = FSDP(model)\n",
        "import copy, torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel = copy.deepcopy(model)\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel = torch.load(path)\n",
        "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.to_empty(device='cuda')\n",
        "import torch\nimport torch_xla.core.xla_model as xm\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel.to(xm.xla_device())\n",
    )

    def accepts(self, story: HolderStory, step: Step) -> bool:
        # A deep copy (timm's ModelEma, AveragedModel) is its own model: replacing the original's
        # parameters leaves it as good as before, and its updates read the live model each step.
        return not story.holder.copies

    def message(self, story: HolderStory, step: Step, line_of: LineOf) -> str:
        holder = story.holder
        models = models_phrase(holder) or "the model"
        # named as the code names it: a temperature or a multiplier is no "model"
        one = len(model_names(holder)) <= 1
        return (
            f"{holder_phrase(holder)} is built on {models}'s parameters, but "
            f"{where(step.placement, line_of)} replaces them with new parameter objects"
            f"{condition_phrase(holder.site, step)}: step() will update tensors {models} no longer "
            f"{'uses' if one else 'use'}, so {models if one else 'they'} silently never "
            f"{'trains' if one else 'train'}; build it after that line"
        )
