"""The invariants of semantics.md §4 as plain functions over optimizers and parameters.

Each function answers one question and returns what breaks it; `diagnose` turns the answers into
findings and `monitor` decides when to ask. Keeping them free of monitor state makes each one
testable in-process on a hand-built model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, List, Optional, Sequence, Set, Tuple

import torch

from .fingerprint import local_tensor


def optimizer_params(opt: Any) -> List[torch.Tensor]:
    return [p for group in opt.param_groups for p in group["params"]]


def meta_params(params: Iterable[torch.Tensor]) -> List[torch.Tensor]:
    """I4: parameters an optimizer holds on the meta device (meta init never materialised for it)."""
    return [p for p in params if p.device.type == "meta"]


def stale_params(params: Iterable[torch.Tensor], live_ids: Set[int]) -> List[torch.Tensor]:
    """I1: optimizer parameters that are not registered in any module that ran forward."""
    return [p for p in params if id(p) not in live_ids]


def with_grad(params: Iterable[torch.Tensor]) -> List[torch.Tensor]:
    return [p for p in params if p.grad is not None]


def any_grad(opt: Any) -> bool:
    """Whether any parameter of `opt` has a gradient; stops at the first (the per-step probe)."""
    for group in opt.param_groups:
        for p in group["params"]:
            if p.grad is not None:
                return True
    return False


def orphan_grads(live: Sequence[Tuple[str, torch.Tensor]], owned_ids: Set[int]) -> List[Tuple[str, torch.Tensor]]:
    """I2 (partial): live parameters that received a gradient but that no optimizer holds."""
    return [(name, p) for name, p in live if p.grad is not None and id(p) not in owned_ids]


@dataclass
class StateMismatch:
    param: torch.Tensor
    key: str
    kind: str  # "device" | "dtype" | "shape"
    state_value: str
    param_value: str


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def state_mismatches(opt: Any) -> List[StateMismatch]:
    """I3: state tensors whose device, dtype or shape differ from their parameter's.

    Scalars (`step`) are skipped: they may live on the CPU by design unless fused/capturable.
    """
    out: List[StateMismatch] = []
    for param, state in list(opt.state.items()):
        if not torch.is_tensor(param) or not isinstance(state, dict):
            continue
        for key, value in state.items():
            if not torch.is_tensor(value) or value.dim() == 0:
                continue
            if value.device != param.device:
                out.append(StateMismatch(param, key, "device", str(value.device), str(param.device)))
            elif value.is_floating_point() and param.is_floating_point() and value.dtype != param.dtype:
                out.append(StateMismatch(param, key, "dtype", _dtype_name(value.dtype), _dtype_name(param.dtype)))
            elif value.shape != param.shape:
                out.append(
                    StateMismatch(param, key, "shape", str(list(value.shape)), str(list(param.shape)))
                )
    return out


def has_state(opt: Any, param: torch.Tensor) -> bool:
    state = opt.state.get(param) if hasattr(opt.state, "get") else None
    return bool(state) and any(torch.is_tensor(v) and v.dim() > 0 for v in state.values())


def zero_unaliased(zero: Any) -> List[torch.Tensor]:
    """ZeRO with `parameters_as_bucket_view=True`: trainable parameters whose storage left the buckets.

    ZeRO broadcasts the buckets after each step; a parameter outside them never receives the
    other ranks' updates.
    """
    if not getattr(zero, "parameters_as_bucket_view", False) or getattr(zero, "_overlap_with_ddp", False):
        return []
    storages = set()
    for per_device in getattr(zero, "_buckets", []) or []:
        for bucket in per_device:
            storages.add(bucket.untyped_storage().data_ptr())
    if not storages:
        return []
    return [
        p
        for p in optimizer_params(zero)
        if p.requires_grad and p.untyped_storage().data_ptr() not in storages
    ]


def zero_device_mismatch(zero: Any) -> Optional[Tuple[str, str]]:
    """ZeRO froze `_default_device` at construction; its parameters now live elsewhere."""
    default = getattr(zero, "_default_device", None)
    if default is None:
        return None
    for p in optimizer_params(zero):
        if p.device.type != default.type:
            return (str(default), str(p.device))
    return None


def all_lr_positive(opt: Any) -> bool:
    for group in opt.param_groups:
        lr = group.get("lr", 1.0)
        try:
            if float(lr) <= 0.0:
                return False
        except (TypeError, ValueError):
            return False
    return True


def any_nonzero_grad(params: Iterable[torch.Tensor]) -> bool:
    for p in params:
        if p.grad is not None and bool(local_tensor(p.grad).ne(0).any()):
            return True
    return False


def replica_disagreement(params: Sequence[torch.Tensor], device: torch.device,
                         group: Any = None) -> Optional[Tuple[int, int]]:
    """I6: how many of `params` differ across ranks, as (differing, total); None if ranks hold different counts.

    Collective: every rank must call it at the same step with its own replicated parameters.
    """
    import torch.distributed as dist

    from .fingerprint import float_sum

    n = len(params)
    counts = torch.tensor([float(n), float(-n)], dtype=torch.float64, device=device)
    dist.all_reduce(counts, op=dist.ReduceOp.MAX, group=group)
    # Every rank sees the same max and min, so every rank takes the same branch here.
    if counts[0].item() != -counts[1].item():
        return None
    sums = torch.tensor([float_sum(p) for p in params], dtype=torch.float64, device=device)
    both = torch.cat([sums, -sums])
    dist.all_reduce(both, op=dist.ReduceOp.MAX, group=group)
    differ = int((both[:n] != -both[n:]).sum().item())
    return differ, n
