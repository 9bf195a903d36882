"""Cheap and exact fingerprints of parameters: float sums for display and cross-rank checks, bit hashes for equality."""
from __future__ import annotations

import sys
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import torch

_MASK64 = (1 << 64) - 1
_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def is_dtensor(tensor: Any) -> bool:
    module = sys.modules.get("torch.distributed.tensor")
    dtensor = getattr(module, "DTensor", None) if module is not None else None
    return dtensor is not None and isinstance(tensor, dtensor)


def local_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """This rank's shard of a DTensor (summing a DTensor would start a collective), else the tensor."""
    tensor = tensor.detach()
    return tensor.to_local() if is_dtensor(tensor) else tensor


def float_sum(tensor: torch.Tensor) -> float:
    local = local_tensor(tensor)
    if local.device.type == "meta" or local.numel() == 0:
        return 0.0
    return float(local.double().sum())


def change_sums(params: Iterable[torch.Tensor]) -> List[float]:
    """Per-parameter sums that any update changes; native precision (float32 for 16-bit types).

    Cheaper than `float_sum` (no float64 copy) and read back in one transfer: this runs on the
    monitor's check steps, inside the training loop.
    """
    sums = []
    for p in params:
        local = local_tensor(p)
        if local.device.type == "meta" or local.numel() == 0:
            continue
        sums.append(local.sum(dtype=torch.float32) if local.element_size() < 4 else local.sum())
    if not sums:
        return []
    if any(s.dtype != sums[0].dtype for s in sums):
        sums = [s.to(torch.float64) for s in sums]
    return torch.stack(sums).tolist()


def bit_hash(tensor: torch.Tensor) -> int:
    """A position-weighted sum of the raw bits: equal hashes mean equal tensors in practice."""
    local = local_tensor(tensor)
    if local.device.type == "meta" or local.numel() == 0:
        return 0
    view = _INT_VIEW.get(local.element_size())
    if view is None:
        return 0
    ints = local.contiguous().view(-1).view(view).to(torch.int64)
    # Odd multiplier and offset keep a swap of two elements from cancelling out.
    weights = torch.arange(1, ints.numel() + 1, dtype=torch.int64, device=ints.device)
    weights = weights * 0x9E3779B1 + 0x7F4A7C15
    return int((ints * weights).sum()) & _MASK64


def fingerprint(params: Iterable[torch.Tensor]) -> Dict[str, object]:
    """Sum, combined hash, and per-parameter hashes and sums of `params`, in their given order.

    A parameter whose local shard is empty (FSDP gives small parameters to one rank only) hashes
    to None: it cannot change on this rank and must not count as "never trained".
    """
    hashes: List[Optional[int]] = []
    sums: List[Optional[float]] = []
    for p in params:
        local = local_tensor(p)
        empty = local.numel() == 0 or local.device.type == "meta"
        sums.append(None if empty else float_sum(local))
        hashes.append(None if empty else bit_hash(local))
    total = sum((s for s in sums if s is not None), 0.0)
    combined = 0
    for index, h in enumerate(hashes):
        combined = (combined * 1000003 + (h or 0) + index) & _MASK64
    return {
        "sum": total,
        "hash": f"{combined:016x}",
        "hashes": [None if h is None else f"{h:016x}" for h in hashes],
        # What the report compares across ranks, as the cross-rank check (I6) compares them.
        "sums": sums,
    }


def update_norm(before: Sequence[Tuple[torch.Tensor, torch.Tensor]]) -> Optional[float]:
    """The L2 norm of one optimizer step's update, from (parameter, its local copy before the step) pairs."""
    norms = []
    for param, old in before:
        new = local_tensor(param)
        if new.shape != old.shape or new.device != old.device or new.numel() == 0 or new.device.type == "meta":
            continue
        if not new.is_floating_point():
            continue
        if new.element_size() < 4:  # 16-bit types: subtract in float32, as their sums are taken
            new, old = new.float(), old.float()
        norms.append(torch.linalg.vector_norm(new - old, dtype=torch.float64))
    if not norms:
        return None
    # One transfer for the whole model.
    return float(torch.linalg.vector_norm(torch.stack(norms)))


def snapshot(params: Iterable[torch.Tensor], limit_bytes: int) -> Optional[List[Tuple[torch.Tensor, torch.Tensor]]]:
    """Local copies of `params` to measure an update against; None when they would take more than `limit_bytes`."""
    locals_ = [(p, local_tensor(p)) for p in params]
    locals_ = [(p, t) for p, t in locals_ if t.numel() and t.device.type != "meta"]
    if sum(t.numel() * t.element_size() for _, t in locals_) > limit_bytes:
        return None
    return [(p, t.clone()) for p, t in locals_]
