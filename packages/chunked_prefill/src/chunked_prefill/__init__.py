"""Chunked prefill: bounded prompt chunks over a functional, cache-aware model."""

from .prefill import ChunkedPrefillOutput, chunk_sizes_for, chunked_prefill

__all__ = [
    "ChunkedPrefillOutput",
    "chunk_sizes_for",
    "chunked_prefill",
]
