"""PT34 supplied artifact: a KV-cache update registered as a custom operator.

cache_write_(cache [S, *F], index [n] int64, value [n, *F]) writes value's rows into the
cache's slots `index`. cache_written(cache, index, value) is meant to give the updated
cache as a new tensor and leave its input alone.

Reported: eager decoding works, but under torch.compile the cache never fills (every step
reads zeros), and torch.library.opcheck fails on both operators.
"""

from __future__ import annotations

import torch
from torch import Tensor


@torch.library.custom_op("gptlab::cache_write_", mutates_args=())
def cache_write_(cache: Tensor, index: Tensor, value: Tensor) -> Tensor:
    cache.index_copy_(0, index, value)
    return cache.clone()


@cache_write_.register_fake
def _cache_write_fake(cache: Tensor, index: Tensor, value: Tensor) -> Tensor:
    return torch.empty_like(cache)


@torch.library.custom_op("gptlab::cache_written", mutates_args=())
def cache_written(cache: Tensor, index: Tensor, value: Tensor) -> Tensor:
    cache.index_copy_(0, index, value)
    return cache.clone()


@cache_written.register_fake
def _cache_written_fake(cache: Tensor, index: Tensor, value: Tensor) -> Tensor:
    return torch.empty_like(value)


__all__ = ["cache_write_", "cache_written"]
