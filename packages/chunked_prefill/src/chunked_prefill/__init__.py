"""Chunked prefill: bounded prompt chunks over a functional, cache-aware model."""

from .model_protocol import CacheAwareModel, CacheAwareOutput, LayerKV, PastKeyValues
from .prefill import ChunkedPrefillOutput, chunk_sizes_for, chunked_prefill

__all__ = [
    "CacheAwareModel",
    "CacheAwareOutput",
    "ChunkedPrefillOutput",
    "LayerKV",
    "PastKeyValues",
    "chunk_sizes_for",
    "chunked_prefill",
]
