"""The ONE model call of a step, over a mixed ragged batch (the reference layout).

Rows are requests; row r brings its next ``k_r`` tokens (a decode: 1, a prefill
chunk: several) at positions ``n_r .. n_r + k_r - 1`` after the ``n_r`` tokens
the pool holds for it. Rows are right-padded to the widest chunk W with token 0
and positions continuing the row (``n_r + k_r ..``); the cache-aware model's mask
is "key position <= query position", so a padding token, sitting after every
real token of its row, is never seen by one. Then:

    past, lengths, starts = cache.model_inputs(ids)    # each row's blocks, gathered
    out = model(tokens [R, W], positions [R, W], past, lengths, starts, use_cache=True)
    cache.append(...)                                   # each row's first k_r new K/V only
    logits of row r at column k_r - 1                   # what the next token is drawn from

``append`` takes an equal token count per call, so rows are appended in groups
of equal ``k``; that is bookkeeping, the model runs once.

A model with the serving seam (``run_blocks`` and ``lm_head``, as this project's
cache-aware models have) runs the same call in place instead (``_forward_in_place``):
same logits and new K/V, without the per-step copies ``forward`` makes of the whole
batch's cache (measured: a 64-row decode step over caches up to 584 tokens, 758 ms
through ``forward``, 87 ms in place). Any other cache-aware model goes through
``forward``; the extension test that wraps the model in a recorder covers that route.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import torch
from torch import Tensor

from cache_aware_lm import (
    CacheAwareModel,
    InPlaceCacheWriter,
    PastKeyValues,
    folded_grouped_query_attention,
)
from paged_kv import PagedKVCache, new_token_kv


def pad_rows(
    rows: Sequence[tuple[list[int], int]], device: torch.device
) -> tuple[Tensor, Tensor, Tensor]:
    """(new tokens, first position) per row -> input_ids, positions ``[R, W]``, counts ``[R]``."""
    width = max(len(tokens) for tokens, _ in rows)
    input_ids = torch.zeros(len(rows), width, dtype=torch.long)
    positions = torch.empty(len(rows), width, dtype=torch.long)
    for row, (tokens, first) in enumerate(rows):
        input_ids[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
        positions[row] = torch.arange(first, first + width)
    counts = torch.tensor([len(tokens) for tokens, _ in rows], dtype=torch.long)
    return input_ids.to(device), positions.to(device), counts.to(device)


@torch.no_grad()
def forward_mixed_batch(
    model: CacheAwareModel,
    cache: PagedKVCache,
    request_ids: Sequence[Hashable],
    rows: Sequence[tuple[list[int], int]],
) -> Tensor:
    """Run every row's new tokens in one call and store their K/V; last logits ``[R, V]``."""
    input_ids, positions, counts = pad_rows(rows, cache.device)
    past, lengths, starts = cache.model_inputs(request_ids)
    old_lengths = torch.zeros_like(counts) if lengths is None else lengths
    if _servable(model):
        logits, present = _forward_in_place(model, input_ids, positions, past, old_lengths)
    else:
        output = model(input_ids, positions, past, lengths, starts, use_cache=True)
        if output.past_key_values is None:
            raise ValueError("the model returned no cache although use_cache=True was passed")
        logits, present = output.logits, output.past_key_values
    new_kv = new_token_kv(present, old_lengths, input_ids.shape[1])
    for count in sorted(set(counts.tolist())):
        (group,) = torch.nonzero(counts == count, as_tuple=True)
        cache.append(
            [request_ids[row] for row in group.tolist()],
            input_ids[group, :count],
            positions[group, :count],
            tuple((key[group, :, :count], value[group, :, :count]) for key, value in new_kv),
        )
    last = counts - 1
    return logits[torch.arange(len(rows), device=last.device), last]


def _servable(model: object) -> bool:
    """The serving seam (``cache_aware_lm.ServableModel``): blocks and head callable apart."""
    return callable(getattr(model, "run_blocks", None)) and hasattr(model, "lm_head")


def _forward_in_place(
    model: Any, input_ids: Tensor, positions: Tensor, past: Any, lengths: Tensor
) -> tuple[Tensor, PastKeyValues]:
    """The same call through the serving seam: (logits ``[R, W, V]``, each layer's buffer).

    ``forward`` over gathered caches builds a new cache per layer and repeats the
    grouped K/V heads for every row: copies of the whole batch's cache, every step.
    Here each layer's K/V go once into a buffer ``[R, H_kv, L + W, D]`` (the gathered
    past in slots ``0..L-1``); row r's new tokens are written in place at slots
    ``lengths[r] ..``; a query in slot q sees slots ``<= q`` (its row's past, then its
    own new tokens; padding sits after them), and the grouped-query kernel folds the
    query heads instead of repeating K/V. Same logits and new K/V as ``forward``.
    """
    geometry = model.geometry
    R, W = input_ids.shape
    L = 0 if past is None else past[0][0].shape[2]
    shape = (R, geometry.n_kv_heads, L + W, geometry.head_dim)
    buffers = []
    for layer in range(geometry.n_layers):
        # Zeros, not empty: a masked slot still meets the weights as 0 * value (NaN stays NaN).
        key = torch.zeros(shape, dtype=geometry.dtype, device=input_ids.device)
        value = torch.zeros_like(key)
        if past is not None:
            key[:, :, :L] = past[layer][0]
            value[:, :, :L] = past[layer][1]
        buffers.append((key, value))
    present = tuple(buffers)
    slots_RW = lengths[:, None] + torch.arange(W, device=input_ids.device)
    mask = (torch.arange(L + W, device=input_ids.device) <= slots_RW[:, :, None])[:, None]
    writer = InPlaceCacheWriter(present, slots_RW, L + W)
    hidden, _ = model.run_blocks(input_ids, positions, mask, writer, folded_grouped_query_attention)
    logits: Tensor = model.lm_head(hidden)
    return logits, present
