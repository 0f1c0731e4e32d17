"""PT34 reference: the supplied cache-update operator with its mutation contract repaired.

The supplied `gptlab::cache_write_` wrote its destination while registered as functional
(`mutates_args=()`), so a functionalized (compiled) graph dropped the write. Repaired, the
boundary is two operators, each telling the dispatcher the truth:

    cache_write_(cache, index, value) -> None     # mutates_args=("cache",): schema
        gptlab::cache_write_(Tensor(a!) cache, Tensor index, Tensor value) -> ()
        cache[index[i]] = value[i] in place; every other slot of cache is untouched.
    cache_written(cache, index, value) -> Tensor  # mutates_args=(): schema
        gptlab::cache_written(Tensor cache, Tensor index, Tensor value) -> Tensor
        a new contiguous tensor equal to cache with those slots replaced; inputs only read.

Shapes: cache [S, *F]; index [n] int64 slot ids in [0, S); value [n, *F] with cache's dtype.
Both fakes run the same shape checks as the real bodies; the fresh-output fake states a
contiguous tensor of cache's size, dtype and device. Slot range is checked on the real
call only (a fake cannot read index's values), before anything is written.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _check_shapes(cache: Tensor, index: Tensor, value: Tensor) -> None:
    """The rules a fake can see: ranks, sizes and dtypes."""
    if cache.dim() < 1:
        raise ValueError(f"cache must be [S, ...], got a {cache.dim()}-D tensor")
    if index.dim() != 1 or index.dtype != torch.int64:
        raise ValueError(f"index must be a 1-D int64 tensor, got {index.dim()}-D {index.dtype}")
    want = (index.shape[0], *cache.shape[1:])
    if tuple(value.shape) != want or value.dtype != cache.dtype:
        raise ValueError(f"value must be {list(want)} {cache.dtype}, got {list(value.shape)}")


def _check(cache: Tensor, index: Tensor, value: Tensor) -> None:
    _check_shapes(cache, index, value)
    outside = (index < 0) | (index >= cache.shape[0])
    if bool(outside.any()):
        raise ValueError(f"index must name slots in [0, {cache.shape[0]}), got {index.tolist()}")


@torch.library.custom_op("gptlab::cache_write_", mutates_args=("cache",))
def cache_write_(cache: Tensor, index: Tensor, value: Tensor) -> None:
    """Write value's rows into cache's slots `index`, in place; returns nothing."""
    _check(cache, index, value)  # before the write: a rejected call changes nothing
    cache.index_copy_(0, index, value)


@cache_write_.register_fake
def _cache_write_fake(cache: Tensor, index: Tensor, value: Tensor) -> None:
    _check_shapes(cache, index, value)


@torch.library.custom_op("gptlab::cache_written", mutates_args=())
def cache_written(cache: Tensor, index: Tensor, value: Tensor) -> Tensor:
    """A new cache equal to `cache` with slots `index` replaced by value's rows."""
    _check(cache, index, value)
    return cache.clone(memory_format=torch.contiguous_format).index_copy_(0, index, value)


@cache_written.register_fake
def _cache_written_fake(cache: Tensor, index: Tensor, value: Tensor) -> Tensor:
    _check_shapes(cache, index, value)
    return cache.new_empty(cache.shape)  # contiguous, offset 0, cache's dtype and device


__all__ = ["cache_write_", "cache_written"]
