"""The one table of PyTorch facts the rules rest on: holders, placements, wrappers and managed calls.

Every rule and the text prefilter read this table; nothing else keeps a list of names. User
configuration extends it through :func:`Catalog.extended`.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cached_property
from typing import Dict, FrozenSet, Iterable, List, Mapping, Optional, Protocol, Sequence, Tuple

class HolderKind(str, Enum):
    """How an object that keeps parameter references reacts to a later move."""

    LAZY = "lazy"  # state is created at the first step, on the parameters' device then
    EAGER = "eager"  # state is allocated in __init__ (Adagrad): a later move leaves it behind
    ZERO = "zero"  # ZeroRedundancyOptimizer: freezes its default device; may alias buckets
    EMA = "ema"  # keeps its own copy or references of the parameters
    FACTORY = "factory"  # a call that receives the model and returns an optimizer

    def __str__(self) -> str:
        return self.value


class PlacementKind(str, Enum):
    """What a placement does to the parameter objects an earlier holder keeps (DESIGN §1)."""

    MOVE = "move"  # device move, same parameter objects (set_data path)
    CAST = "cast"  # dtype cast, same parameter objects
    REPLACE = "replace"  # new parameter objects: an earlier holder is stale
    FSDP_ORIG = "fsdp-orig-params"  # FSDP1 with use_orig_params=True: same objects, sharded data
    WRAP = "wrap"  # shares the parameters: canonical order only
    LAYOUT = "layout"  # memory format change, same objects: canonical order only (semantics row 5)
    HOME = "home"  # `.cpu()`, `.to("cpu")`: back on the CPU, where a later `.cuda()` is a real move again

    def __str__(self) -> str:
        return self.value


LAZY, EAGER, ZERO, EMA, FACTORY = HolderKind
MOVE, CAST, REPLACE, FSDP_ORIG, WRAP, LAYOUT, HOME = PlacementKind
# Kinds that leave the parameters as they were: only the canonical-order (info) rules read them.
CANONICAL_KINDS = frozenset({WRAP, LAYOUT})
# Not a placement kind: what a rule reads that reads DDP-like wrappers (they register gradient hooks)
# whatever their kind.
SYNC_WRAPPER = "sync-wrapper"


class PlacementFacts(Protocol):
    """What a placement says about itself: a catalog `Placement` and an analysis `PlacementEvent` both do."""

    kind: str
    sync_wrapper: bool


def reads_placement(reads: FrozenSet[str], placement: PlacementFacts) -> bool:
    """Whether whoever reads the kinds `reads` (a rule's row, the selected rules the fix planner follows)
    reads this placement: its kind is there, or it is a DDP-like wrapper (any kind) and SYNC_WRAPPER is."""
    return placement.kind in reads or (placement.sync_wrapper and SYNC_WRAPPER in reads)


@dataclass(frozen=True)
class Placement:
    """A call that moves, casts, wraps or replaces the parameters of the module it receives."""

    kind: str
    label: str  # how messages name the operation
    sync_wrapper: bool = False  # DDP-like: it registers gradient hooks (convert-after-wrap, discarded)
    ddp: bool = False  # DistributedDataParallel itself (stepped-before-ddp)
    inplace_kw: Optional[str] = None  # `inplace=True` makes it harmless (prepare_qat, fuse)
    orig_params_kw: Optional[str] = None  # `use_orig_params=True` downgrades REPLACE to FSDP_ORIG
    # The parameters become shards or flat views: an optimizer state saved for the full parameters no
    # longer loads into an optimizer built after it (it needs the wrapper's own state-dict API).
    shards: bool = False
    # A pass over a finished model whose module renames every state_dict key (`_orig_mod.`): code that
    # keeps the bare module beside it for checkpoints and export applies it last on purpose.
    applied_last: bool = False

    def kind_given(self, true_keywords: Iterable[str]) -> str:
        """The kind once the call's keywords set to True are known (the argument rules of calls)."""
        given = set(true_keywords)
        if self.inplace_kw in given:
            return WRAP
        if self.orig_params_kw in given:
            return FSDP_ORIG
        return self.kind


# Method keywords that make a call replace the parameters: `load_state_dict(sd, assign=True)`.
KEYWORD_REPLACEMENTS: Dict[str, Tuple[str, str]] = {"load_state_dict": ("assign", ".load_state_dict(..., assign=True)")}


def classify_method_placement(
    method: str, placement: "Placement", arguments: "Sequence[Tuple[Optional[str], str, bool]]"
) -> Tuple[Optional[str], str, str]:
    """The argument rules of `.to(...)`, `.type(...)`, `.cuda()`: what the call does, how messages
    name it and its argument text; None for a no-op. `arguments`: (keyword or None, the argument's
    text, whether it is known to be an XLA device) for each argument."""
    if method == "type" and not arguments:
        return None, "", ""  # `.type()` with no argument returns a string
    if method != "to":
        argument = ", ".join(f"{keyword}={text}" if keyword else text for keyword, text, _ in arguments)
        return placement.kind, f".{method}({argument})", argument
    kind: Optional[str] = None
    texts = []
    layout = home = ""
    for keyword, text, xla in arguments:
        if keyword == "memory_format":
            layout = text
            continue
        if keyword in ("non_blocking", "copy"):
            continue
        texts.append(text)
        lowered = text.lower()
        if xla or any(marker in lowered for marker in REPLACING_DEVICE_MARKERS):
            return REPLACE, f".to({text})", text
        if keyword == "dtype" or is_dtype_text(text):
            kind = kind or CAST
            continue
        if lowered.strip("'\"") in NOOP_DEVICES or lowered in ('torch.device("cpu")', "torch.device('cpu')"):
            home = text
            continue
        kind = MOVE
    if kind is None and home:
        return HOME, f".to({home})", home  # back on the CPU, as `.cpu()`
    if kind is None and layout:
        return LAYOUT, f".to(memory_format={layout})", layout  # same objects, a new layout
    if kind is None:
        return None, "", ""
    argument = ", ".join(texts)
    return kind, f".to({argument})", argument


def is_dtype_text(text: str) -> bool:
    if text.startswith("torch.") and text[6:] in DTYPE_NAMES:
        return True
    return "dtype" in text.lower()


# Optimizer classes of torch.optim (2.13) plus the third-party ones seen in public training code.
_TORCH_OPTIMIZERS = (
    "ASGD Adadelta Adafactor Adam AdamW Adamax LBFGS Muon NAdam RAdam RMSprop Rprop SGD SparseAdam"
).split()

HOLDERS: Dict[str, str] = {
    **{f"torch.optim.{name}": LAZY for name in _TORCH_OPTIMIZERS},
    "torch.optim.Adagrad": EAGER,
    "torch.distributed.optim.ZeroRedundancyOptimizer": ZERO,
    "torch.optim.swa_utils.AveragedModel": EMA,
    "torch_ema.ExponentialMovingAverage": EMA,
    "timm.utils.ModelEma": EMA,
    "timm.utils.ModelEmaV2": EMA,
    "timm.utils.ModelEmaV3": EMA,
    "ema_pytorch.EMA": EMA,
    "apex.optimizers.FusedAdam": LAZY,
    "apex.optimizers.FusedLAMB": LAZY,
    "apex.optimizers.FusedSGD": LAZY,
    "apex.optimizers.FusedNovoGrad": LAZY,
    "apex.optimizers.FusedAdagrad": EAGER,
    "bitsandbytes.optim.Adam8bit": LAZY,
    "bitsandbytes.optim.AdamW8bit": LAZY,
    "bitsandbytes.optim.PagedAdamW": LAZY,
    "bitsandbytes.optim.PagedAdamW8bit": LAZY,
    "bitsandbytes.optim.Lion8bit": LAZY,
    "bitsandbytes.optim.SGD8bit": LAZY,
    "transformers.AdamW": LAZY,
    "transformers.Adafactor": LAZY,
    "transformers.optimization.AdamW": LAZY,
    "transformers.optimization.Adafactor": LAZY,
    "lion_pytorch.Lion": LAZY,
    "timm.optim.create_optimizer": FACTORY,
    "timm.optim.create_optimizer_v2": FACTORY,
    "timm.optim.Lamb": LAZY,
    "timm.optim.Lars": LAZY,
    "timm.optim.AdamP": LAZY,
    "torch_optimizer.Lamb": LAZY,
    "torch_optimizer.RAdam": LAZY,
    "horovod.torch.DistributedOptimizer": LAZY,
    # Framework builders handed the model itself: `build_optimizer(model, cfg.optimizer)` (OpenMMLab),
    # `build_optimizer(cfg, model)` (detectron2) build the configured optimizer on its parameters.
    "mmcv.runner.build_optimizer": FACTORY,
    "mmcv.runner.optimizer.build_optimizer": FACTORY,
    "mmengine.optim.build_optim_wrapper": FACTORY,
    "detectron2.solver.build_optimizer": FACTORY,
}

# Bare class names that mean an optimizer whatever module they come from (re-exports, vendored copies).
HOLDER_TERMINALS: Dict[str, str] = {
    **{name: LAZY for name in _TORCH_OPTIMIZERS},
    "Adagrad": EAGER,
    "ZeroRedundancyOptimizer": ZERO,
    "AveragedModel": EMA,
    "ExponentialMovingAverage": EMA,
    "ModelEma": EMA,
    "ModelEmaV2": EMA,
    "ModelEmaV3": EMA,
    "FusedAdam": LAZY,
    "FusedLAMB": LAZY,
    "FusedSGD": LAZY,
    "Adam8bit": LAZY,
    "AdamW8bit": LAZY,
    "PagedAdamW": LAZY,
    "PagedAdamW8bit": LAZY,
    "Lion": LAZY,
    "Lamb": LAZY,
    "create_optimizer_v2": FACTORY,
    # Lightning's hook: what it returns are the module's optimizers, by the API's definition.
    "configure_optimizers": FACTORY,
}

# Calls that return objects unpickled from a file: modules with parameters of their own, whatever
# object was saved (`model = torch.load(path)` after an optimizer was built on `model` replaces it).
UNPICKLING_CALLS: FrozenSet[str] = frozenset({"torch.load"})
# Holders that keep a deep copy of the model, not its parameters: a later wrap that shares the
# parameters cannot touch the copy (timm documents that its EMA is built before DDP), though a later
# move still leaves the copy behind.
COPYING_HOLDERS: FrozenSet[str] = frozenset({"ModelEma", "ModelEmaV2", "ModelEmaV3", "AveragedModel"})
# A copying holder given this keyword puts its copy there itself: a later move of the model does not
# strand it (`AveragedModel(model, device=device)`, timm's `ModelEmaV2(model, device=...)`).
DEVICE_KEYWORD = "device"
# A tensor's or a module's `.device`: where its tensors are (a device value, see the walker).
DEVICE_ATTRIBUTE = "device"
COPY_DEVICE_KEYWORD = DEVICE_KEYWORD
# A helper given an optimizer that calls this on it re-binds the optimizer to the parameters it has
# then (composer's `prepare_fsdp_module` clears and re-adds the param groups after wrapping).
REGROUP_METHODS: FrozenSet[str] = frozenset({"add_param_group"})

# Holders that also keep the model they average, as a submodule: moving the holder moves the model.
CONTAINING_HOLDERS: FrozenSet[str] = frozenset({"ema_pytorch.EMA"})

# Naming conventions for optimizer classes no table lists (`WarmupAdam`, `OpenAIAdam`, `Nadam`,
# `FusedLAMB`, `AdamW8bit`): a class name that ends in an optimizer's name, whatever its case.
# Spelled as class names spell them, so that the prefilter can look for the same words literally.
OPTIMIZER_NAME_ENDINGS: Tuple[str, ...] = tuple(
    """Adam ADAM adam AdamW ADAMW Adamw Adamax Adagrad Adadelta Adafactor AdaBelief AdaBound SGD SGDW LAMB Lamb LARS
    Lars Lion RMSprop RMSProp LBFGS NovoGrad Novograd Ranger Sophia SophiaG Shampoo Yogi MADGRAD Prodigy ASGD Rprop
    Muon""".split()  # the spellings seen in public code: each one costs every file's text scan
)
_OPTIMIZER_SUFFIX = re.compile(r"^_*[A-Z]\w*?(?:%s)(?:8bit|32bit)?$" % "|".join(sorted(OPTIMIZER_NAME_ENDINGS, key=len, reverse=True)))
_EAGER_SUFFIX = re.compile(r"(?i)adagrad$")
# Packages whose CamelCase names are optimizers (save schedulers and helpers).
OPTIMIZER_PACKAGES: Tuple[str, ...] = (
    "torch.optim.", "bitsandbytes.optim.", "torch_optimizer.", "apex.optimizers.", "deepspeed.ops.adam.",
    "deepspeed.ops.lamb.", "deepspeed.ops.lion.", "timm.optim.", "lion_pytorch.", "adabelief_pytorch.",
    "pytorch_lamb.", "came_pytorch.", "prodigyopt.", "schedulefree.", "dadaptation.", "heavyball.",
)
_NOT_AN_OPTIMIZER_CLASS = re.compile(r"(?i)sched|warmup$|lr$|state|config|param|group|closure|wrapper|hook")

# Names a config object has in training code; an argument rooted in one is a setting, and a config
# entry that names an optimizer tells an otherwise unnamed factory what it builds.
CONFIG_ROOTS: FrozenSet[str] = frozenset({"cfg", "config", "conf", "args", "hparams", "opt", "opts", "hp", "hps", "configs"})


def is_config_root(name: str) -> bool:
    return name in CONFIG_ROOTS


def is_config_entry(dotted: str) -> bool:
    """`args.drop_prob`, `self.hparams.optim`: an entry of a config object, by its root's name."""
    parts = dotted.split(".")
    if parts[0] == "self":
        parts = parts[1:]
    return len(parts) >= 2 and is_config_root(parts[0])


def config_entry_names_optimizer(dotted: str) -> bool:
    """`cfg.optimizer`, `self.hparams.optim`: a config entry whose name says it is an optimizer."""
    return is_config_entry(dotted) and names_optimizer(dotted.rsplit(".", 1)[-1])


# Calls that hand on the optimizer class they are given: `getattr(torch.optim, name)`, `partial(AdamW, lr=...)`.
CLASS_HANDING_CALLS: FrozenSet[str] = frozenset({"getattr", "partial", "functools.partial"})


def is_optimizer_module(qualified: str) -> bool:
    """`torch.optim`, `bitsandbytes.optim`: a module of optimizer classes (`getattr(torch.optim, name)`)."""
    return any(package.startswith(qualified + ".") for package in OPTIMIZER_PACKAGES)


def names_optimizer(word: str) -> bool:
    """`optimizer`, `optim`, `OPTIMIZER`: a config entry or string that names an optimizer."""
    return _GENERIC_HOLDER.search(word) is not None and not _NOT_A_FACTORY.search(word)


def conventional_holder_kind(qualified: str) -> Optional[str]:
    """The kind of an optimizer class known only by convention: its name or its package."""
    terminal = qualified.rsplit(".", 1)[-1]
    if _OPTIMIZER_SUFFIX.match(terminal):
        return EAGER if _EAGER_SUFFIX.search(terminal) else LAZY
    if terminal[:1].isupper() and not terminal.isupper() and not _NOT_AN_OPTIMIZER_CLASS.search(terminal):
        if any(qualified.startswith(package) for package in OPTIMIZER_PACKAGES):
            return LAZY
    return None


# Calls whose first argument is the module they act on.
CALL_PLACEMENTS: Dict[str, Placement] = {
    "torch.nn.parallel.DistributedDataParallel": Placement(WRAP, "DistributedDataParallel", sync_wrapper=True, ddp=True),
    "torch.nn.DataParallel": Placement(WRAP, "DataParallel"),
    "torch.nn.parallel.DataParallel": Placement(WRAP, "DataParallel"),
    "torch.distributed.fsdp.FullyShardedDataParallel": Placement(
        REPLACE, "FullyShardedDataParallel", sync_wrapper=True, orig_params_kw="use_orig_params", shards=True
    ),
    # torch_xla's FSDP always flattens into new parameters (it has no `use_orig_params`), and its
    # SPMD variant (FSDPv2) moves them to the XLA device: the optimizer must come after either.
    "torch_xla.distributed.fsdp.XlaFullyShardedDataParallel": Placement(
        REPLACE, "XlaFullyShardedDataParallel", sync_wrapper=True, shards=True
    ),
    "torch_xla.experimental.spmd_fully_sharded_data_parallel.SpmdFullyShardedDataParallel": Placement(
        REPLACE, "SpmdFullyShardedDataParallel", sync_wrapper=True, shards=True
    ),
    "torch.distributed.fsdp.fully_shard": Placement(REPLACE, "fully_shard", shards=True),
    "torch.distributed._composable.fsdp.fully_shard": Placement(REPLACE, "fully_shard", shards=True),
    "torch.distributed.tensor.parallel.parallelize_module": Placement(REPLACE, "parallelize_module", shards=True),
    "torch.compile": Placement(WRAP, "torch.compile", applied_last=True),
    "torch.jit.script": Placement(WRAP, "torch.jit.script"),
    "torch.nn.SyncBatchNorm.convert_sync_batchnorm": Placement(WRAP, "convert_sync_batchnorm"),
    "torch.nn.utils.weight_norm": Placement(REPLACE, "weight_norm"),
    "torch.nn.utils.parametrizations.weight_norm": Placement(REPLACE, "weight_norm"),
    "torch.nn.utils.spectral_norm": Placement(WRAP, "spectral_norm"),
    "torch.nn.utils.parametrizations.spectral_norm": Placement(WRAP, "spectral_norm"),
    "torch.nn.utils.parametrizations.orthogonal": Placement(WRAP, "orthogonal parametrization"),
    "torch.nn.utils.parametrize.register_parametrization": Placement(WRAP, "register_parametrization"),
    "torch.ao.quantization.prepare_qat": Placement(REPLACE, "prepare_qat", inplace_kw="inplace"),
    "torch.quantization.prepare_qat": Placement(REPLACE, "prepare_qat", inplace_kw="inplace"),
    "torch.ao.quantization.fuse_modules": Placement(REPLACE, "fuse_modules", inplace_kw="inplace"),
    "torch.quantization.fuse_modules": Placement(REPLACE, "fuse_modules", inplace_kw="inplace"),
    "torch.ao.quantization.fuse_modules_qat": Placement(WRAP, "fuse_modules_qat"),
    "torch.nn.utils.convert_conv2d_weight_memory_format": Placement(LAYOUT, "convert_conv2d_weight_memory_format"),
    # Moves the model to the rank's device, then wraps it in DDP.
    "ignite.distributed.auto_model": Placement(MOVE, "auto_model"),
    # Framework helpers users call from outside the checked tree; each returns `DDP(model)` (detectron2's
    # only when the world is larger than one, which is when the order matters).
    "detectron2.engine.create_ddp_model": Placement(WRAP, "create_ddp_model", sync_wrapper=True, ddp=True),
    "detectron2.engine.defaults.create_ddp_model": Placement(WRAP, "create_ddp_model", sync_wrapper=True, ddp=True),
    "yolov5.utils.torch_utils.smart_DDP": Placement(WRAP, "smart_DDP", sync_wrapper=True, ddp=True),
}

# Bare callee names recognised without an import (re-exports, `from ... import *`, aliases we cannot see).
CALL_PLACEMENT_TERMINALS: Dict[str, str] = {
    "DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "DDP": "torch.nn.parallel.DistributedDataParallel",
    "DataParallel": "torch.nn.DataParallel",
    "FullyShardedDataParallel": "torch.distributed.fsdp.FullyShardedDataParallel",
    "FSDP": "torch.distributed.fsdp.FullyShardedDataParallel",
    "fully_shard": "torch.distributed.fsdp.fully_shard",
    "create_ddp_model": "detectron2.engine.create_ddp_model",
    "smart_DDP": "yolov5.utils.torch_utils.smart_DDP",
    "parallelize_module": "torch.distributed.tensor.parallel.parallelize_module",
    "convert_sync_batchnorm": "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
    "weight_norm": "torch.nn.utils.weight_norm",
    "prepare_qat": "torch.ao.quantization.prepare_qat",
    "fuse_modules": "torch.ao.quantization.fuse_modules",
    "register_parametrization": "torch.nn.utils.parametrize.register_parametrization",
}

# Wrapper classes known by the end of their name, longest suffix first.
_WRAPPER_SUFFIXES: Tuple[Tuple[str, str], ...] = (
    ("XlaFullyShardedDataParallel", "torch_xla.distributed.fsdp.XlaFullyShardedDataParallel"),
    ("SpmdFullyShardedDataParallel",
     "torch_xla.experimental.spmd_fully_sharded_data_parallel.SpmdFullyShardedDataParallel"),
    ("FullyShardedDataParallel", "torch.distributed.fsdp.FullyShardedDataParallel"),
    ("DistributedDataParallel", "torch.nn.parallel.DistributedDataParallel"),
    ("ShardedDDP", "torch.nn.parallel.DistributedDataParallel"),
    ("DataParallel", "torch.nn.DataParallel"),
)

# Methods a framework base class outside the checked tree runs on `self`, for a subclass that calls
# them (`class MyStrategy(DDPStrategy)` calling `self.setup_optimizers(trainer)` then
# `self.model_to_device()`: the order Lightning fixed in its own strategies, PR #11886). Keyed by the
# class or package the base is imported from; each method says what it does to `self.model`: a
# placement kind, `ddp` (wraps it in DDP), or `optimizer` (builds the optimizers on it, kept on
# `self.optimizers`). `[tool.ddp-lint] extra-base-methods` adds more.
OPTIMIZER_SETUP = "optimizer"
DDP_WRAP = "ddp"
_LIGHTNING_STRATEGY_METHODS: Dict[str, str] = {
    "model_to_device": MOVE, "configure_ddp": DDP_WRAP, "setup_optimizers": OPTIMIZER_SETUP, "init_optimizers": OPTIMIZER_SETUP,
}
BASE_METHODS: Dict[str, Dict[str, str]] = {
    package: _LIGHTNING_STRATEGY_METHODS
    for package in ("pytorch_lightning.plugins", "pytorch_lightning.strategies", "lightning.pytorch.strategies",
                    "lightning.pytorch.plugins")
}
# What the message calls each placement a base method makes.
_BASE_METHOD_LABELS: Dict[str, str] = {MOVE: "self.model.to(...)", CAST: "a dtype cast of self.model",
                                       REPLACE: "new parameters for self.model", WRAP: "a wrapper around self.model",
                                       FSDP_ORIG: "FSDP(self.model, use_orig_params=True)",
                                       DDP_WRAP: "DistributedDataParallel(self.model)"}


def base_method_placement(kind: str) -> Placement:
    if kind == DDP_WRAP:
        return Placement(WRAP, _BASE_METHOD_LABELS[kind], sync_wrapper=True, ddp=True)
    return Placement(PlacementKind(kind), _BASE_METHOD_LABELS[kind])


# Test frameworks' lifecycles: a method that runs before each of the class's methods whose names
# start with the prefix (unittest runs `setUp` before every `test*`; pytest runs `setup_method`
# before every `test*` of a `Test*` class). Keyed by base class, or by "" for pytest's plain classes.
LIFECYCLES: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "unittest.TestCase": (("setUp", "test"),),
    "unittest.IsolatedAsyncioTestCase": (("setUp", "test"), ("asyncSetUp", "test")),
    "": (("setup_method", "test"),),
}


def lifecycle(bases: Iterable[str], class_name: str) -> FrozenSet[Tuple[str, str]]:
    """(method that runs first, prefix of the methods it runs before) for a class with these
    (qualified) bases; pytest's only when the class is named `Test*`, as pytest collects it."""
    found = set(LIFECYCLES[""]) if class_name.startswith("Test") else set()
    for base in bases:
        found.update(LIFECYCLES.get(base, ()))
    return frozenset(found)


# Library calls that move the module they are handed when given a device (ignite's trainers).
DEVICE_KEYWORD_MOVES: Dict[str, str] = {
    "ignite.engine.create_supervised_trainer": "device",
    "ignite.engine.create_supervised_evaluator": "device",
}

# `.cpu()`: recorded (as HOME) so that "already placed there" knows the way back, and read by the
# stateful-optimizer rule when the optimizer steps again after it.
HOME_METHODS: FrozenSet[str] = frozenset({"cpu"})

# Methods called on the module itself. `to` is classified by its arguments (device, dtype, xla, cpu).
METHOD_PLACEMENTS: Dict[str, Placement] = {
    "cuda": Placement(MOVE, ".cuda()"),
    "xpu": Placement(MOVE, ".xpu()"),
    "mps": Placement(MOVE, ".mps()"),
    "to": Placement(MOVE, ".to()"),
    "half": Placement(CAST, ".half()"),
    "double": Placement(CAST, ".double()"),
    "float": Placement(CAST, ".float()"),
    "bfloat16": Placement(CAST, ".bfloat16()"),
    "type": Placement(CAST, ".type()"),
    "to_empty": Placement(REPLACE, ".to_empty()"),
    "compile": Placement(WRAP, ".compile()"),
}

# On a tensor, a move or cast is a new tensor (a module's is the module itself): `w = w.xpu()` leaves
# the optimizer with the old `w`.
TENSOR_COPY_METHODS: FrozenSet[str] = frozenset(
    name for name, placement in METHOD_PLACEMENTS.items() if placement.kind in (MOVE, CAST))

# Module methods that return the module itself, so `m = m.train()` keeps the handle.
SELF_RETURNING_METHODS: FrozenSet[str] = frozenset(
    "to cuda cpu xpu mps half float double bfloat16 type train eval requires_grad_ to_empty share_memory apply".split()
)

# Calls handed the model and the optimizer together; they remap or wrap the optimizer themselves
# (accelerate's `prepare`, Fabric's `setup`, DeepSpeed's `initialize`, ColossalAI's `Booster.boost`).
MANAGED_TERMINALS: FrozenSet[str] = frozenset(
    "prepare setup initialize prepare_model_and_optimizer setup_optimizers boost".split()
)

# What an optimizer is used for: a call or a parameter known as an optimizer by its name alone
# (`build_optimizer(model)`, `def resume(model, optimizer)`) is one only when the file uses it so
# (analysis/uses.py). `zero_grad` and `load_state_dict` are a module's too: they confirm a name that
# already says optimizer, they never make an optimizer of anything else.
OPTIMIZER_USE_METHODS: FrozenSet[str] = frozenset({"step", "zero_grad", "add_param_group", "load_state_dict"})
PARAM_GROUPS = "param_groups"
OPTIMIZER_USE_ATTRIBUTES: FrozenSet[str] = frozenset({PARAM_GROUPS})
# Of those methods, the ones only an optimizer has, and the ones that only an optimizer has together
# (a module has `zero_grad`, a gym environment and an LR scheduler have `step`).
OPTIMIZER_ONLY_METHODS: FrozenSet[str] = frozenset({"add_param_group"})
OPTIMIZER_METHODS_TOGETHER: FrozenSet[str] = frozenset({"zero_grad", "step"})
# Keywords under which a call receives an optimizer (`get_scheduler(optimizer=opt)`, `Trainer(optimizers=...)`).
OPTIMIZER_KEYWORD = r"^(?:optim|optimizer|optimizers|opt)$"
# Calls that take the optimizer they schedule, scale or wrap: `StepLR(opt)`, `ReduceLROnPlateau(opt)`,
# `get_linear_schedule_with_warmup(opt, ...)`, `hvd.DistributedOptimizer(opt)`, `Lookahead(opt)`,
# `scaler.unscale_(opt)`; `amp.initialize(model, opt)` takes it second.
TAKES_OPTIMIZER_CALL = r"(?i)sched|warmup|LR$|plateau|^DistributedOptimizer$|^Lookahead$|^unscale_$"
TAKES_OPTIMIZER_SECOND = frozenset({"initialize"})
# `scaler.step(optimizer)`: a gradient scaler steps the optimizer it is handed.
SCALER_RECEIVER = r"(?i)scaler|amp"


# A call whose name matches this (ignoring case) and that receives a model builds an optimizer:
# `build_optimizer`, `init_optimizers`, `get_optim`; not `optimize(...)` or `..._optimization`, and
# not the words for what is best (`optimal_fft_length(n)`, the `optimum` package), which name no optimizer.
GENERIC_HOLDER_NAME = r"(?i)optim(?!i[sz]e(?!r)|i[sz]ation|al|um)"
_GENERIC_HOLDER = re.compile(GENERIC_HOLDER_NAME)
# ... except names that step, list, collect or describe (`get_optimizer_grouped_parameters(model)`
# collects the parameters, the optimizer comes next; `optimizer_state_dict`, `_optimizer_step_code`)
# and predicates or loggers (`is_from_optimizer_source(x)`).
GENERIC_HOLDER_DENY: FrozenSet[str] = frozenset(
    {"optimizer_step", "optimizer_zero_grad", "optimizers", "zero_grad", "lr_scheduler_step", "state_dict"}
)
_NOT_A_FACTORY = re.compile(
    r"^_*(?:is|has|should|can|log|print|check|validate|verify|assert|save|load|restore|offload|consolidate"
    r"|broadcast|reset|clear|unscale|clip)_|param"
    r"|(?:^|_)(?:step|state|hook|grad|closure)s?(?:_|$)",
    re.IGNORECASE,
)


def is_generic_holder_name(terminal: str) -> bool:
    """Whether a call through this (unresolved) name builds an optimizer from what it is handed.

    A class is what its last word says: `FancyOptimizer(...)` is one, `OptimizerVariable(...)` and
    `OptimWrapper(...)` are not (the optimizer they are handed is, and is seen on its own).
    """
    if terminal in GENERIC_HOLDER_DENY or _NOT_A_FACTORY.search(terminal):
        return False
    if terminal.endswith(("Optimizer", "Optim")):
        return True
    if terminal[:1].isupper() and not terminal.isupper():
        return False
    return _GENERIC_HOLDER.search(terminal) is not None


# The callee side of project analysis: a function handed an optimizer already built together with
# its model. A parameter receives an optimizer when its name says so (`optimizer`, `optim`,
# `critic_optimizer`, `optimizer_g`; not `opt`, which is as often argparse's options, nor
# `optimizer_name`/`optimizer_cfg`) or its annotation does (`Optimizer`, `torch.optim.Optimizer`,
# `Optional[Optimizer]`; not `Type[Optimizer]`); a name annotated otherwise (`optimizer: str`) or
# given a string default is a setting. The prefilter's tree stage asks the same functions.
_ARRIVING_OPTIMIZER_NAME = re.compile(r"(?i)^(?:[a-z0-9]+_)*(?:optim|optimi[sz]er)s?(?:_?[a-z]|\d+)?$")
_OPTIMIZER_ANNOTATION = re.compile(r"(?<!\w)(?:\w+\.)*Optimi[sz]er\b(?!\w)")
_MODEL_PARAMETER_NAME = re.compile(
    r"(?i)^(?:[a-z0-9]+_)*(?:model|net|network|module|backbone|generator|discriminator|policy)s?(?:_[a-z]|\d+)?$|^net[A-Z]\w*$"
)
_MODEL_ANNOTATION = re.compile(r"(?:Module|Model)\b")
_CLASS_ANNOTATION = re.compile(r"(?i)(?:^|\[|\.)(?:type|callable)\[")


# Generics through which an annotation still names the object itself (or several of them); any other
# (`Lazy[Optimizer]`, `Factory[Optimizer]`) names something that builds one later.
_HOLDING_GENERICS: FrozenSet[str] = frozenset(
    "Optional Union List Tuple Sequence Iterable Dict Mapping list tuple dict".split()
)


def _annotation_names(annotation: str, wanted: "re.Pattern[str]") -> bool:
    """Whether the annotation is the wanted class itself, or holds it only through plain containers."""
    try:
        tree = ast.parse(annotation.strip().strip("\"'"), mode="eval").body
    except SyntaxError:
        return wanted.search(annotation) is not None and not _CLASS_ANNOTATION.search(annotation)

    def names(node: ast.expr) -> bool:
        if isinstance(node, ast.Subscript):
            head = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
            inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return head in _HOLDING_GENERICS and any(names(element) for element in inner)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return names(node.left) or names(node.right)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return _annotation_names(node.value, wanted)
        text = ast.unparse(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""
        return bool(text) and wanted.search(text) is not None

    return names(tree)


def receives_optimizer(name: str, annotation: str = "", string_default: bool = False) -> bool:
    if string_default:
        return False
    if annotation:
        return _annotation_names(annotation, _OPTIMIZER_ANNOTATION)
    return _ARRIVING_OPTIMIZER_NAME.match(name) is not None


def declares_nothing(annotation: str) -> bool:
    """`Any`, `object`, `Optional[Any]`: an annotation that says nothing of the type, so the name and the
    uses speak for the parameter as if it had none (`optimizer: Any`)."""
    return _NO_DECLARATION.fullmatch(_unless_none(annotation.strip("\"' "))) is not None


_NO_DECLARATION = re.compile(r"(?:typing\.|t\.|tp\.)?(?:Any|object)")


def optimizer_annotation_names(annotation: str) -> List[str]:
    """The dotted names in an annotation that name an optimizer class (`Optimizer`, `optim.Optimizer`)."""
    return [match.group(0) for match in _OPTIMIZER_ANNOTATION.finditer(annotation)]


def receives_model(name: str, annotation: str = "") -> bool:
    """A module parameter: annotated as one, or named as one and annotated with no more than a class
    whose name says nothing (`model: WideDeep`, a project's own model class)."""
    if annotation and _annotation_names(annotation, _MODEL_ANNOTATION):
        return True
    if annotation and not _PLAIN_CLASS_ANNOTATION.fullmatch(_unless_none(annotation.strip("\"' "))):
        return False
    return _MODEL_PARAMETER_NAME.match(name) is not None


def _unless_none(annotation: str) -> str:
    """`Optional[SentenceTransformer]`, `Net | None`: the class it names when it is given at all."""
    match = _OPTIONAL.fullmatch(annotation) or _OR_NONE.fullmatch(annotation)
    return match.group(1).strip().strip("\"'") if match else annotation


_OPTIONAL = re.compile(r"(?:typing\.|t\.|tp\.)?Optional\[(.+)\]")
_OR_NONE = re.compile(r"(.+?)\s*\|\s*None")


# `WideDeep`, `models.Net`: one class, no generic, no builtin type (`str`, `dict` are lower case).
_PLAIN_CLASS_ANNOTATION = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*")


# A context manager named after the optimizer, around a move, re-points the optimizer at the moved
# parameters when it exits (poutyne's `with self._update_optim_device(): self.network.cuda()`).
_OPTIMIZER_SYNC_CONTEXT = re.compile(r"(?i)optim")


def syncs_optimizer(context_manager: str) -> bool:
    return _OPTIMIZER_SYNC_CONTEXT.search(context_manager.rsplit(".", 1)[-1]) is not None


# Optimizer methods that create or load state (a later move strands it).
STEP = "step"
BACKWARD = "backward"  # `loss.backward()`: the modules called in computing `loss` get gradients
LOAD_STATE = "load_state_dict"
STATE_METHODS: Dict[str, str] = {LOAD_STATE: LOAD_STATE, STEP: STEP}
# An optimizer's state tensors (`optimizer.state[p]["exp_avg"]`): moved with the model, they follow it.
OPTIMIZER_STATE = "state"
# Optimizer methods whose statements move with the optimizer when the fixer moves it.
OPTIMIZER_DEPENDENT_METHODS: FrozenSet[str] = frozenset({LOAD_STATE, "add_param_group", "zero_grad"})
# Calls that build things on an optimizer and move with it (schedulers, EMA, scalers), by name part.
OPTIMIZER_DEPENDENT_CALL_WORDS: Tuple[str, ...] = (
    "lr_scheduler", "Scheduler", "LR", "Warmup", "Ema", "EMA", "AveragedModel", "GradScaler", "SWALR")

# The package itself, its module namespace as imported names spell it, and the device a `.cpu()` reaches.
TORCH = "torch"
TORCH_PREFIX = "torch."
# A file of PyTorch's own package, as opposed to a namespace package's `torch` (`texar/torch/`, imported
# as `texar.torch`): its package folder holds this module.
TORCH_OWN_MODULE = "_tensor.py"
MODULE_NAMESPACES: Tuple[str, ...] = ("torch.nn.", "nn.")
# The base of every module: a class derived from it (through a project's own bases) is a module.
MODULE_BASE_CLASSES: FrozenSet[str] = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
DEVICE_CONSTRUCTORS: FrozenSet[str] = frozenset({"torch.device", "device"})
CPU = "cpu"
# Device strings that name one device of a kind (a move there is not "the run's device").
NAMED_DEVICE_PREFIXES: Tuple[str, ...] = ("cuda:", "xpu:", "mps")
# What chooses each process's current CUDA device (`torch.cuda.set_device(rank)`, `with
# torch.cuda.device(rank):`, `CUDA_VISIBLE_DEVICES` set per process). A file with none of them leaves the
# current device cuda:0 in every process, so `.cuda()` there is not where a rank's own index points.
CURRENT_DEVICE_CALLS: Tuple[str, ...] = ("set_device", "cuda.device")
CURRENT_DEVICE_VARIABLES: FrozenSet[str] = frozenset({"CUDA_VISIBLE_DEVICES"})
# A move with no index, `.cuda()` or to one of these: the current device.
CURRENT_DEVICE_TEXTS: FrozenSet[str] = frozenset({"", "cuda", 'torch.device("cuda")', "torch.device('cuda')"})
# A wrapper keyword whose list names each process's own device by index: what the file passes there is a
# rank's device (`DistributedDataParallel(model, device_ids=[opt.local_rank])`).
DEVICE_INDEX_KEYWORD = "device_ids"
# The cast that makes float32: parameters are float32 already unless cast before, so it is a no-op
# after a wrap and undoes an earlier `.half()`.
FLOAT32_CAST = "float"
DEVICE_MOVE = "to"  # the move classified by its arguments (device, dtype, xla, cpu)
APPLY = "apply"  # `module.apply(fn)`: runs fn on every submodule
GET_SUBMODULE = "get_submodule"
# Methods that register a function to run later, when the object they are called on runs (ignite's
# `@trainer.on(Events.STARTED)`, `trainer.add_event_handler(event, fn)`).
HANDLER_REGISTRATIONS: FrozenSet[str] = frozenset({"on", "add_event_handler"})
NAMED_PARAMETERS = "named_parameters"  # param groups built from names (a wrap prefixes them)
# Methods that register a new submodule or parameter on the module they are called on.
REGISTERING_METHODS: FrozenSet[str] = frozenset({"add_module", "register_module", "register_parameter"})
# A tensor's fields that hold its values, not its identity (`p.data = ...` keeps the object).
REQUIRES_GRAD = "requires_grad"
TENSOR_VALUE_FIELDS: FrozenSet[str] = frozenset({"data", "grad", REQUIRES_GRAD})
# What an optimizer's parameter filter reads, and the method that changes it.
GRAD_SWITCHES: Tuple[str, ...] = (REQUIRES_GRAD, REQUIRES_GRAD + "_")

# Modules that hold the modules they are built from: moving the container moves them.
MODULE_CONTAINERS: FrozenSet[str] = frozenset({"torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ModuleDict"})

# A module's own methods that keep a child under a name, as `self.<name> = child` does.
OWN_CHILD_REGISTRATIONS: FrozenSet[str] = frozenset({"self.add_module", "self.register_module"})
# Parameter accessors on a module.
PARAMETER_METHODS: FrozenSet[str] = frozenset({"parameters", "named_parameters"})
# The keyword every torch optimizer takes its parameters by (the first positional argument otherwise), and
# the key of a param group's parameters (`{"params": ..., "lr": ...}`).
PARAMS_KEYWORD = "params"


# `actor_opt`, `opts`: an optimizer's short name, which names options too (`opt = parser.parse_args()`):
# evidence only beside parameters handed to the call that makes it (see `hands_parameters`).
_OPTIMIZER_ABBREVIATION = re.compile(r"(?i)(?:^|_)opts?$")


def abbreviates_optimizer(name: str) -> bool:
    return _OPTIMIZER_ABBREVIATION.search(name) is not None


def hands_parameters(method: Optional[str], name: Optional[str]) -> bool:
    """What a call handed first must look like for its result to be an optimizer by use alone (a call
    that names nothing we know, see the walker's `_built_by_use`): `x.parameters()` (`method`), or a
    name for parameters (`params`, `self.param_groups`). The prefilter asks the same of the syntax."""
    if method is not None:
        return method in PARAMETER_METHODS
    return name is not None and "param" in name.rsplit(".", 1)[-1].lower()

# Tensors made to be trained on their own: a later `t = t.to(device)` makes a copy the optimizer
# does not hold (semantics: a tensor's `.to()` returns a new tensor unless it is already there).
TENSOR_FACTORIES: FrozenSet[str] = frozenset(
    f"torch.{name}" for name in "zeros ones tensor randn rand empty full zeros_like ones_like full_like".split()
)
PARAMETER_CLASSES: FrozenSet[str] = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
TENSOR_COPY = "tensor copy"  # the operation of such a `.to()`: a replacement no reordering can mend

# Module methods that iterate over the module's submodules (the module itself among them).
MODULE_ITERATORS: FrozenSet[str] = frozenset({"modules", "children", "named_modules", "named_children"})

# Module methods that leave a module's set of parameter objects as it is: they read it, switch modes,
# copy values into the same tensors or add hooks. Any other method called on a module an optimizer
# holds may add, remove or replace parameters (`add_module`, `register_parameter`, a model's own
# `grow()`), and a fix that moves the optimizer across it would hold a different set. The fix planner
# reads this; the in-place tensor methods (`fill_`, `zero_`, ending in `_`) keep the objects too.
PARAMETER_KEEPING_METHODS: FrozenSet[str] = frozenset({
    "parameters", "named_parameters", "buffers", "named_buffers", "modules", "children", "named_modules",
    "named_children", "state_dict", "train", "eval", "zero_grad", "forward", "extra_repr", "get_submodule",
    "get_parameter", "get_buffer", "register_buffer", "register_forward_hook", "register_forward_pre_hook",
    "register_full_backward_hook", "register_full_backward_pre_hook", "register_backward_hook",
    "register_state_dict_pre_hook", "register_load_state_dict_post_hook", "numel", "size", "dim", "item",
    "tolist", "detach", "clone", "cpu", "numpy", "data_ptr", "share_memory", "float", "double", "half", "bfloat16",
    "to", "cuda", "type", "load_state_dict",
})
# Functions that may add, remove or replace parameters of the module they are given (a
# parametrization whose `right_inverse` returns several tensors registers new ones); the replacing
# placements (`weight_norm`) are placements above, reported as such.
PARAMETER_CHANGING_FUNCTIONS: FrozenSet[str] = frozenset({
    "setattr", "delattr", "register_parametrization", "remove_parametrizations",
})

# Container methods through which parameters flow into a list (`decay.append(p)`).
COLLECTING_METHODS: FrozenSet[str] = frozenset({"append", "extend", "add", "insert", "update", "add_param_group"})

# Module-attribute segments that are transparent handles of the same module (`ddp.module`).
TRANSPARENT_ATTRIBUTES: FrozenSet[str] = frozenset({"module", "_orig_mod"})
# Attributes only a tensor has (a module has neither): what they hold is a tensor, whose move or cast is a
# new tensor (see TENSOR_COPY_METHODS), never the module's.
TENSOR_ATTRIBUTES: FrozenSet[str] = frozenset({"data", "grad"})
# The settings torch's modules keep as numbers (`nn.Linear.out_features`, `nn.Conv2d.kernel_size`): what
# they hold is never a module or a parameter, whatever module they are read from.
MODULE_SETTING_ATTRIBUTES: FrozenSet[str] = frozenset({
    "in_features", "out_features", "in_channels", "out_channels", "kernel_size", "stride", "dilation",
    "num_embeddings", "embedding_dim", "padding_idx", "num_features", "hidden_size", "input_size", "num_layers",
    "normalized_shape", "num_heads", "embed_dim", "head_dim", "training",
})

# `.to()` arguments that make the move a parameter replacement (new objects), and no-op devices.
REPLACING_DEVICE_MARKERS: Tuple[str, ...] = ("xla", "lazy")
NOOP_DEVICES: FrozenSet[str] = frozenset({"cpu"})
# The device with no storage (`with torch.device("meta"):`): what is built there is materialised later.
META_DEVICE = "meta"
DTYPE_NAMES: FrozenSet[str] = frozenset(
    "float16 half bfloat16 float32 float float64 double complex64 complex128 int8 uint8 float8_e4m3fn".split()
)

# Spellings of one dtype, so that `.half()` after `.to(torch.float16)` is a round trip.
DTYPE_ALIASES: Dict[str, str] = {
    "half": "float16", "float": "float32", "double": "float64", "bfloat16": "bfloat16",
    "type(float16)": "float16", "dtype=float16": "float16", "dtype=bfloat16": "bfloat16",
}

SHARDING_OPERATIONS: FrozenSet[str] = frozenset(p.label for p in CALL_PLACEMENTS.values() if p.shards)

# After these, parameters are DTensors, which `to_empty` swaps in place (semantics row 19b).
DTENSOR_PLACEMENTS: FrozenSet[str] = frozenset({"fully_shard", "parallelize_module"})
SWAPPED_AFTER_DTENSOR: FrozenSet[str] = frozenset({"to_empty"})

# Module-wide switches of the dtype modules are built in (float32 otherwise): a file that calls one
# may build float64 modules, so a `.float()` there may convert.
DEFAULT_DTYPE_SWITCHES: Tuple[str, ...] = ("set_default_dtype", "set_default_tensor_type")
# The dtype every module is built in unless a switch above changes it.
DEFAULT_DTYPE = "float32"

# Module-wide switch that turns every conversion into a replacement (semantics row 9).
OVERWRITE_FLAG = "set_overwrite_module_params_on_conversion"


@dataclass(frozen=True, eq=False)  # compared by identity: it keys the prefilter cache
class Catalog:
    """The facts above, plus whatever the user's configuration adds, in one immutable object."""

    holders: Mapping[str, str] = field(default_factory=lambda: dict(HOLDERS))
    holder_terminals: Mapping[str, str] = field(default_factory=lambda: dict(HOLDER_TERMINALS))
    call_placements: Mapping[str, Placement] = field(default_factory=lambda: dict(CALL_PLACEMENTS))
    call_placement_terminals: Mapping[str, str] = field(default_factory=lambda: dict(CALL_PLACEMENT_TERMINALS))
    managed_terminals: FrozenSet[str] = MANAGED_TERMINALS
    managed_qualified: FrozenSet[str] = frozenset()
    base_methods: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: dict(BASE_METHODS))

    def extended(
        self,
        factories: Iterable[str] = (),
        placements: Mapping[str, str] = (),
        wrappers: Iterable[str] = (),
        managed: Iterable[str] = (),
        base_methods: Mapping[str, str] = (),
    ) -> "Catalog":
        """A catalog that also knows a team's own optimizer factories, placements, wrappers, managed
        calls and base-class methods (`"my_lib.BaseTrainer.to_device" = "move"`)."""
        bases = {base: dict(methods) for base, methods in self.base_methods.items()}
        for name, kind in dict(base_methods).items():
            base, _, method = name.rpartition(".")
            bases.setdefault(base, {})[method] = kind
        holders = dict(self.holders)
        holders.update({name: FACTORY for name in factories})
        calls = dict(self.call_placements)
        for name, kind in dict(placements).items():
            calls[name] = Placement(kind, name.rsplit(".", 1)[-1])
        for name in wrappers:
            calls[name] = Placement(WRAP, name.rsplit(".", 1)[-1])
        return replace(
            self,
            holders=holders,
            call_placements=calls,
            managed_qualified=self.managed_qualified | frozenset(managed),
            base_methods=bases,
        )

    def base_method(self, base: str, method: str) -> Optional[str]:
        """What `self.method()` does to `self.model` in a subclass of `base` (qualified), when the
        catalog knows that base class or its package."""
        for known, methods in self.base_methods.items():
            if method in methods and (base == known or base.startswith(known + ".")):
                return methods[method]
        return None

    @cached_property
    def base_method_names(self) -> FrozenSet[str]:
        """The names of the base-class methods that place the model (for the prefilter)."""
        return frozenset(m for methods in self.base_methods.values() for m, kind in methods.items() if kind != OPTIMIZER_SETUP)

    def holder_kind(self, qualified: str) -> Optional[str]:
        kind = self.holders.get(qualified)
        if kind is not None:
            return kind
        if qualified.startswith("torch.optim.") and qualified.count(".") == 2:
            return LAZY  # a class added to torch.optim after this table was written
        terminal = qualified.rsplit(".", 1)[-1]
        return self.holder_terminals.get(terminal) or conventional_holder_kind(qualified)

    def call_placement(self, qualified: str) -> Optional[Placement]:
        found = self.call_placements.get(qualified)
        if found is not None:
            return found
        terminal = qualified.rsplit(".", 1)[-1]
        alias = self.call_placement_terminals.get(terminal)
        if alias:
            return self.call_placements.get(alias)
        if terminal[:1].isupper():
            # Subclasses by convention: `LightningDistributedDataParallel`, `ShardedDataParallel`.
            for suffix, target in _WRAPPER_SUFFIXES:
                found = self.call_placements.get(target) if terminal.endswith(suffix) else None
                if found is not None:
                    return replace(found, label=terminal)
        return None

    def is_managed(self, qualified: str) -> bool:
        return qualified in self.managed_qualified or qualified.rsplit(".", 1)[-1] in self.managed_terminals

    def prefilter(self, with_wraps: bool) -> "Prefilter":
        """What a file's text must contain for any rule to fire (see `Prefilter`).

        Every placement is a method call, a call of a cataloged function, `copy.deepcopy`, an
        unpickling call (`torch.load`), an `assign=True` load or a module assigned to an attribute;
        every holder is a cataloged name or a call whose name has `optim` in it (not
        `optimize`/`optimization`). Canonical-order wrappers count only when the info rule that
        reports them is selected.

        Python lets whitespace, backslash continuations and (inside brackets) comments sit between any
        two tokens, so the patterns allow them wherever the engine would still see the same call.
        """
        methods = sorted(prefilter_methods(with_wraps))
        calls = {name.rsplit(".", 1)[-1] for name, p in self.call_placements.items() if counts_for_prefilter(p, with_wraps)}
        calls.update(t for t, q in self.call_placement_terminals.items() if q in self.call_placements and counts_for_prefilter(self.call_placements[q], with_wraps))
        wrappers = {name.rsplit(".", 1)[-1] for name, p in self.call_placements.items() if p.sync_wrapper}
        wrappers.update(t for t, q in self.call_placement_terminals.items() if q in self.call_placements and self.call_placements[q].sync_wrapper)
        gap = r"(?:[ \t\f\r\n\\]|#[^\n]*\n)*"  # what may separate two tokens
        return Prefilter(
            placement_patterns=(
                r"\.%s(?:%s)%s\(" % (gap, "|".join(methods), gap),
                # `load_state_dict(..., assign=True)`, however the value is spelled
                *(r"%s\s*=(?!=)" % keyword for keyword, _ in KEYWORD_REPLACEMENTS.values()),
                # `model.fc = nn.Linear(...)`, possibly parenthesised or annotated (on one line)
                r"\.%s\w+%s(?::[^=\n]*)?=%s(?:\(%s)*(?:\w+%s\.%s)*[A-Z]\w*%s\(" % (gap, gap, gap, gap, gap, gap, gap),
                # ... or through a lower-case alias of a torch.nn class
                r"from[ \t\\]+torch\s*\.\s*nn\b[\w. \t\\]*import\s*(?:\([^)]*|(?:[^;\n\\]|\\[\s\S])*)\bas\b",
            ),
            placement_words=tuple(sorted(calls | {"deepcopy"} | {name.rsplit(".", 1)[-1] for name in DEVICE_KEYWORD_MOVES}
                                         | self.base_method_names)),
            holder_pattern=GENERIC_HOLDER_NAME,
            holder_words=_fewest_words(
                {name.rsplit(".", 1)[-1] for name in self.holders} | set(self.holder_terminals) | set(OPTIMIZER_NAME_ENDINGS)
            ),
            wrapper_words=tuple(sorted(wrappers)),
            # `model = torch.load(path)`: the name rebound to an unpickled object, the function called
            # through its module, an alias of the module, or imported by name
            unpickling_patterns=tuple(pattern for module, function in sorted(c.rsplit(".", 1) for c in UNPICKLING_CALLS)
                                      for pattern in (r"%s%s\.%s%s%s\(" % (module, gap, gap, function, gap),
                                                      r"import[ \t]+%s[ \t]+as\b" % module,
                                                      r"from[ \t]+%s[ \t]+import\b[^\n]*\b%s\b" % (module, function))),
        )


def _fewest_words(words: Iterable[str]) -> Tuple[str, ...]:
    """The holder words a text search still needs: one that the generic name already matches, or
    that contains a shorter word of the set (`AdamW` contains `Adam`), adds nothing to a substring test."""
    words = {w for w in words if not _GENERIC_HOLDER.search(w)}
    return tuple(sorted(w for w in words if not any(other != w and other in w for other in words)))


def prefilter_methods(with_wraps: bool) -> FrozenSet[str]:
    """The method names whose calls the prefilter counts as placements: those that can lead to a
    finding, and `.cpu()` (a move back to the CPU while the optimizer steps again)."""
    return frozenset(m for m, p in METHOD_PLACEMENTS.items() if counts_for_prefilter(p, with_wraps)) | HOME_METHODS


def counts_for_prefilter(placement: Placement, with_wraps: bool) -> bool:
    """Whether a placement can lead to a finding: plain wrappers and layout changes feed only the
    canonical-order (info) rules; DDP-like wrappers also feed convert-after-wrap, discarded-wrapper
    and stepped-before-DDP."""
    return with_wraps or placement.kind not in CANONICAL_KINDS or placement.ddp or placement.sync_wrapper


@dataclass(frozen=True)
class Prefilter:
    """A sound, cheap text test. Words are matched as substrings (a superset of whole words, so still
    sound) because CPython's `in` is much faster than a regular expression alternation."""

    placement_patterns: Tuple[str, ...]
    placement_words: Tuple[str, ...]
    holder_pattern: str
    holder_words: Tuple[str, ...]
    wrapper_words: Tuple[str, ...]
    # Placements by a call that unpickles, counted apart: the project stage asks a file for a half of its
    # own beyond them (a conversion script's `checkpoint = torch.load(path)` is everywhere and replaces
    # nothing; the tree stage tells the two apart where a file is parsed).
    unpickling_patterns: Tuple[str, ...] = ()


DEFAULT_CATALOG = Catalog()
