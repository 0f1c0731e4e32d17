"""What a cache-aware forward returns, and the cache's type names."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

LayerKV = tuple[Tensor, Tensor]  # (key, value), each [B, H_kv, S, D]
PastKeyValues = tuple[LayerKV, ...]  # one pair per decoder block


@dataclass(frozen=True)
class CacheAwareOutput:
    """Logits ``[B, T, V]``; the cache and its metadata only when ``use_cache`` was set.

    ``cache_lengths[b]`` valid tokens sit in slots ``0..len-1`` of row b, at absolute
    positions ``cache_start_positions[b] + slot``.
    """

    logits: Tensor
    past_key_values: PastKeyValues | None = None
    cache_lengths: Tensor | None = None
    cache_start_positions: Tensor | None = None
