"""The duck-typed cache-aware model speculative decoding drives (CONTRACTS.md, cache_aware_lm)."""

from __future__ import annotations

from typing import Protocol

from torch import Tensor

LayerKV = tuple[Tensor, Tensor]
PastKeyValues = tuple[LayerKV, ...]


class CacheAwareOutput(Protocol):
    @property
    def logits(self) -> Tensor: ...
    @property
    def past_key_values(self) -> PastKeyValues | None: ...
    @property
    def cache_lengths(self) -> Tensor | None: ...
    @property
    def cache_start_positions(self) -> Tensor | None: ...


class CacheAwareModel(Protocol):
    def __call__(
        self,
        input_ids: Tensor,
        positions: Tensor,
        past_key_values: PastKeyValues | None = None,
        cache_lengths: Tensor | None = None,
        cache_start_positions: Tensor | None = None,
        use_cache: bool = False,
    ) -> CacheAwareOutput: ...
