"""Chunked prefill: one prompt, ceil(T / C) cached calls of at most C tokens.

The model is functional: each call takes a cache and returns a new one. Chunking is
therefore nothing but threading the returned state (K/V, lengths, starts) into the
next call and concatenating the per-chunk logits in order. Exactness comes from the
model's absolute-position rectangular mask, not from anything here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from cache_aware_lm import CacheAwareModel, CacheAwareOutputLike, PastKeyValues

from .validation import check_cache_kinds, check_chunk_count, check_int, check_prompt


@dataclass(frozen=True)
class ChunkedPrefillOutput:
    """What one full cached call would return, plus how the prompt was cut."""

    logits: Tensor  # [B, T, V], chunks concatenated in order
    past_key_values: PastKeyValues  # the cache after the last chunk
    cache_lengths: Tensor  # [B], input lengths (or 0) + T
    cache_start_positions: Tensor  # [B], input starts (or positions[:, 0])
    chunk_sizes: tuple[int, ...]  # every entry <= chunk_size, summing to T

    @property
    def chunk_count(self) -> int:
        return len(self.chunk_sizes)


def chunk_sizes_for(T: int, chunk_size: int) -> tuple[int, ...]:
    """[C, C, ..., remainder]: ceil(T / C) chunks (none for T = 0)."""
    check_int("T", T, 0)
    check_int("chunk_size", chunk_size, 1)
    check_chunk_count(T, chunk_size)
    return tuple(min(chunk_size, T - start) for start in range(0, T, chunk_size))


def chunked_prefill(
    model: CacheAwareModel,
    input_ids: Tensor,
    positions: Tensor,
    chunk_size: int,
    *,
    past_key_values: PastKeyValues | None = None,
    cache_lengths: Tensor | None = None,
    cache_start_positions: Tensor | None = None,
) -> ChunkedPrefillOutput:
    """Prefill ``input_ids`` [B, T] at ``positions`` [B, T] in chunks of ``chunk_size``.

    An optional starting cache (a prefix the caller owns) is continued, never written:
    the model returns new tensors and this function only rebinds names.
    """
    check_prompt(model, input_ids, positions, chunk_size)
    check_cache_kinds(past_key_values, cache_lengths, cache_start_positions)
    sizes = chunk_sizes_for(input_ids.shape[1], chunk_size)
    past, lengths, starts = past_key_values, cache_lengths, cache_start_positions
    chunk_logits: list[Tensor] = []
    offset = 0
    for size in sizes:
        output = model(
            input_ids[:, offset : offset + size],
            positions[:, offset : offset + size],
            past_key_values=past,
            cache_lengths=lengths,
            cache_start_positions=starts,
            use_cache=True,
        )
        chunk_logits.append(output.logits)
        # Thread the whole returned state: K/V alone would leave lengths and starts stale.
        returned = _returned_cache(output)
        past, lengths, starts = returned
        offset += size
    return ChunkedPrefillOutput(
        logits=torch.cat(chunk_logits, dim=1),
        past_key_values=returned[0],
        cache_lengths=returned[1],
        cache_start_positions=returned[2],
        chunk_sizes=sizes,
    )


def _returned_cache(output: CacheAwareOutputLike) -> tuple[PastKeyValues, Tensor, Tensor]:
    past, lengths, starts = (
        output.past_key_values,
        output.cache_lengths,
        output.cache_start_positions,
    )
    if past is None or lengths is None or starts is None:
        raise ValueError("model returned no cache state from a use_cache=True call")
    return past, lengths, starts
