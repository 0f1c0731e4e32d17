"""PT21 physical KV slot write (transfer case; owner P20).

A paged cache holds P pages of S slots each. A flat physical slot s names page s // S and
in-page offset s % S; token i of `values` is written there, in place:

    cache[slot_mapping[i] // S, slot_mapping[i] % S] = values[i]      for 0 <= i < N

Every destination is checked before the first write (no negative slot, none past the last
physical slot P * S - 1, no slot named twice), so a rejected call changes nothing. One
indexed assignment writes all N tokens; every slot not named keeps its bytes.

Shapes: cache [P, S, Hkv, D]; values [N, Hkv, D] (cache's dtype and device); slot_mapping
[N] int32/int64 -> None (cache written in place, its storage kept).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def write_slots_(cache: Tensor, values: Tensor, slot_mapping: Tensor) -> None:
    """cache[s // S, s % S] = values[i] for s = slot_mapping[i], in place."""
    _check_kinds(cache, values, slot_mapping)
    _check_slots(slot_mapping, capacity=cache.shape[0] * cache.shape[1])
    slots = slot_mapping.long()
    page_size = cache.shape[1]
    cache[slots // page_size, slots % page_size] = values


def _check_kinds(cache: Tensor, values: Tensor, slot_mapping: Tensor) -> None:
    """Kinds, shapes, dtypes and devices, before any slot is read."""
    if not isinstance(cache, Tensor) or cache.dim() != 4:
        raise ValueError(f"cache must be a 4-D tensor [P, S, Hkv, D], got {described(cache)}")
    if not isinstance(values, Tensor) or values.dtype != cache.dtype:
        raise ValueError(f"values must be a {cache.dtype} tensor, got {described(values)}")
    is_index = isinstance(slot_mapping, Tensor) and slot_mapping.dtype in (torch.int32, torch.int64)
    if not is_index or slot_mapping.dim() != 1:
        raise ValueError(f"slot_mapping must be a 1-D int tensor, got {described(slot_mapping)}")
    wanted = (slot_mapping.shape[0], *cache.shape[2:])
    if values.shape != wanted:
        raise ValueError(f"values must have shape {list(wanted)}, got {tuple(values.shape)}")
    if values.device != cache.device or slot_mapping.device != cache.device:
        raise ValueError(f"values and slot_mapping must be on the cache's {cache.device}")


def _check_slots(slot_mapping: Tensor, capacity: int) -> None:
    """Negative, past the last physical slot, or named twice: rejected before any write."""
    if bool((slot_mapping < 0).any()):
        raise ValueError(f"slot_mapping holds a negative slot: {slot_mapping.tolist()}")
    if bool((slot_mapping >= capacity).any()):
        raise ValueError(f"slot_mapping passes the last physical slot: {slot_mapping.tolist()}")
    if torch.unique(slot_mapping).numel() != slot_mapping.numel():
        raise ValueError(f"slot_mapping names a slot twice: {slot_mapping.tolist()}")


__all__ = ["write_slots_"]
