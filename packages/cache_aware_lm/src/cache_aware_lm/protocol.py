"""The cache-aware forward contract as types: what any faithful model accepts and returns.

``CacheAwareModel`` is the call every consumer drives (chunked prefill, speculative
decoding, the greedy loop); ``CacheAwareOutputLike`` is what it returns, read by
attribute. Both models here satisfy them (their output is the ``CacheAwareOutput``
dataclass), and so does any other implementation of the contract: typing only.
"""

from __future__ import annotations

from typing import Protocol

from torch import Tensor

from .output import PastKeyValues


class CacheAwareOutputLike(Protocol):
    """Logits ``[B, T, V]``; the cache and its metadata when ``use_cache`` was set."""

    @property
    def logits(self) -> Tensor: ...
    @property
    def past_key_values(self) -> PastKeyValues | None: ...
    @property
    def cache_lengths(self) -> Tensor | None: ...
    @property
    def cache_start_positions(self) -> Tensor | None: ...


class CacheAwareModel(Protocol):
    """A causal LM whose batch rows carry their own cache length and position origin."""

    def __call__(
        self,
        input_ids: Tensor,
        positions: Tensor,
        past_key_values: PastKeyValues | None = None,
        cache_lengths: Tensor | None = None,
        cache_start_positions: Tensor | None = None,
        use_cache: bool = False,
    ) -> CacheAwareOutputLike: ...


__all__ = ["CacheAwareModel", "CacheAwareOutputLike"]
