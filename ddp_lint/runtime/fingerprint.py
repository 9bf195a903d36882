"""Cheap and exact fingerprints of parameters: float sums for display and cross-rank checks, bit hashes for equality."""
from __future__ import annotations

import sys
from typing import Any, Dict, Iterable, List, Optional

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
    """Sum, combined hash and per-parameter hashes of `params`, in their given order.

    A parameter whose local shard is empty (FSDP gives small parameters to one rank only) hashes
    to None: it cannot change on this rank and must not count as "never trained".
    """
    hashes: List[Optional[int]] = []
    total = 0.0
    for p in params:
        local = local_tensor(p)
        empty = local.numel() == 0 or local.device.type == "meta"
        total += 0.0 if empty else float_sum(local)
        hashes.append(None if empty else bit_hash(local))
    combined = 0
    for index, h in enumerate(hashes):
        combined = (combined * 1000003 + (h or 0) + index) & _MASK64
    return {
        "sum": total,
        "hash": f"{combined:016x}",
        "hashes": [None if h is None else f"{h:016x}" for h in hashes],
    }
