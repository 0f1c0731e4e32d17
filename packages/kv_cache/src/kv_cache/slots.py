"""The in-place slot write: new K/V rows scattered into preallocated storage.

`key_cache[b, :, slots[b, t]] = key_new[b, :, t]` for every row b and new token t,
written by one `scatter_` per tensor along the slot axis. The destination is
never reallocated, so its data pointer is stable across every write.
"""

from __future__ import annotations

import torch
from torch import Tensor

from arg_checks import check_tensor

from .checks import check_writable, memory_span, overlaps


def write_slots(
    key_cache_BHSD: Tensor,
    value_cache_BHSD: Tensor,
    key_new_BHTD: Tensor,
    value_new_BHTD: Tensor,
    slots_BT: Tensor,
) -> None:
    """Unchecked write; callers have validated shapes, dtypes, devices and slot values."""
    B, H, T, D = key_new_BHTD.shape
    # A broadcast view of the slot table, not a copy: [B, T] -> [B, H, T, D].
    index_BHTD = slots_BT[:, None, :, None].expand(B, H, T, D)
    key_cache_BHSD.scatter_(2, index_BHTD, key_new_BHTD)
    value_cache_BHSD.scatter_(2, index_BHTD, value_new_BHTD)


def check_slot_write(
    key_cache: object, value_cache: object, key_new: object, value_new: object, slots: object
) -> None:
    """ValueError/TypeError unless `append_kv_cache` can write every slot exactly once."""
    if not isinstance(key_cache, Tensor):
        raise TypeError(f"key_cache must be a tensor, got {type(key_cache).__name__}")
    if key_cache.dim() != 4:
        raise ValueError(f"key_cache must be a [B, H, S, D] tensor, got {list(key_cache.shape)}")
    if key_cache.is_meta:  # no memory: the overlap checks below would blame value_cache
        raise ValueError("key_cache is on device meta: it holds no data to write into")
    B, H, S, D = key_cache.shape
    dtype, device = key_cache.dtype, key_cache.device
    check_tensor("value_cache", value_cache, shape=(B, H, S, D), dtype=dtype, device=device)
    check_tensor("slots", slots, shape=(B, None), dtype=torch.long, device=device)
    assert isinstance(value_cache, Tensor) and isinstance(slots, Tensor)
    T = slots.shape[1]
    check_tensor("key_new", key_new, shape=(B, H, T, D), dtype=dtype, device=device)
    check_tensor("value_new", value_new, shape=(B, H, T, D), dtype=dtype, device=device)
    assert isinstance(key_new, Tensor) and isinstance(value_new, Tensor)
    check_memory(key_cache, value_cache, key_new, value_new)
    if T == 0:
        return
    # Value checks: two tiny reductions over [B, T], read back in one host sync.
    out_of_range = ((slots < 0) | (slots >= S)).any()
    sorted_slots = slots.sort(dim=1).values
    repeated = (sorted_slots[:, 1:] == sorted_slots[:, :-1]).any()
    bad_range, bad_repeat = torch.stack((out_of_range, repeated)).tolist()
    if bad_range:
        raise ValueError(f"slots must lie in [0, {S}) (the cache capacity), got {slots.tolist()}")
    if bad_repeat:
        raise ValueError(f"slots must be distinct within each row, got {slots.tolist()}")


def check_memory(
    key_cache: Tensor, value_cache: Tensor, key_new: Tensor, value_new: Tensor
) -> None:
    """Two separate writable caches, and new K/V that read none of their memory."""
    check_writable("key_cache", key_cache)
    check_writable("value_cache", value_cache)
    key_span, value_span = memory_span(key_cache), memory_span(value_cache)
    if overlaps(key_span, value_span):
        raise ValueError("value_cache shares memory with key_cache: pass two separate tensors")
    for name, new in (("key_new", key_new), ("value_new", value_new)):
        span = memory_span(new)
        if overlaps(span, key_span) or overlaps(span, value_span):
            raise ValueError(f"{name} shares memory with the cache it is written into")


def append_kv_cache(
    key_cache: Tensor, value_cache: Tensor, key_new: Tensor, value_new: Tensor, slots: Tensor
) -> None:
    """Write `key_new[b, :, t]` into `key_cache[b, :, slots[b, t]]` (and values) in place.

    Shapes: caches `[B, H, S, D]`, new K/V `[B, H, T, D]`, `slots` long `[B, T]` of
    distinct row-local indices in `[0, S)`; the two caches separate tensors that the new
    K/V do not overlap. Everything is checked before the first write (TypeError for a
    wrong kind of object, ValueError otherwise), so a rejected call leaves both caches
    untouched.
    """
    check_slot_write(key_cache, value_cache, key_new, value_new, slots)
    write_slots(key_cache, value_cache, key_new, value_new, slots)
