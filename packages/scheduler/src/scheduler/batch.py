"""The ONE model call of a step, over a mixed ragged batch (the reference layout).

Rows are requests; row r brings its next ``k_r`` tokens (a decode: 1, a prefill
chunk: several) at positions ``n_r .. n_r + k_r - 1`` after the ``n_r`` tokens
the pool holds for it. Rows are right-padded to the widest chunk W with token 0
and positions continuing the row (``n_r + k_r ..``); the cache-aware model's mask
is "key position <= query position", so a padding token, sitting after every
real token of its row, is never seen by one. Then:

    past, lengths, starts = cache.model_inputs(ids)    # each row's blocks, gathered
    out = model(tokens [R, W], positions [R, W], past, lengths, starts, use_cache=True)
    reserve + write each row's first k_r new K/V       # committed with the step (atomic.py)
    logits of row r at column k_r - 1                   # what the next token is drawn from

``append`` takes an equal token count per call, so rows are appended in groups
of equal ``k``; that is bookkeeping, the model runs once.

A model with the serving seam (``run_blocks`` and ``lm_head``, as this project's
cache-aware models have) takes the packed route instead (``packed.py``): the same
logits and stored K/V with no padding computed and no cache copied. Any other
cache-aware model comes here; the extension test that wraps the model in a
recorder covers this route.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeGuard

import torch
from torch import Tensor

from cache_aware_lm import CacheAwareModel, ServableModel
from paged_kv import PagedKVCache, new_token_kv

from . import checks
from .atomic import StagedWrites
from .packed import forward_packed


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
    *,
    staged: StagedWrites | None = None,
) -> Tensor:
    """Run every row's new tokens in one call and store their K/V; last logits ``[R, V]``.

    With ``staged`` the K/V are written but left to the caller to commit or abort
    with the rest of its step (``atomic.py``); without, they are committed here.
    Either way a failure (the model's, the pool's) leaves the cache as it was.
    """
    if _servable(model):
        # validates the rows itself
        return forward_packed(model, cache, request_ids, rows, staged=staged)
    checks.batch_rows(request_ids, rows)
    input_ids, positions, counts = pad_rows(rows, cache.device)
    past, lengths, starts = cache.model_inputs(request_ids)
    old_lengths = torch.zeros_like(counts) if lengths is None else lengths
    output = model(input_ids, positions, past, lengths, starts, use_cache=True)
    if output.past_key_values is None:
        raise ValueError("the model returned no cache although use_cache=True was passed")
    logits, present = output.logits, output.past_key_values
    new_kv = new_token_kv(present, old_lengths, input_ids.shape[1])
    stage = StagedWrites() if staged is None else staged
    written = StagedWrites()  # this call's own reservations, undone together on a failure
    try:
        for count in sorted(set(counts.tolist())):
            (group,) = torch.nonzero(counts == count, as_tuple=True)
            pending = cache.reserve(
                [request_ids[row] for row in group.tolist()],
                input_ids[group, :count],
                positions[group, :count],
            )
            written.add(pending)
            pending.write(
                tuple((key[group, :, :count], value[group, :, :count]) for key, value in new_kv)
            )
    except BaseException:
        written.abort()
        raise
    written.hand_over(stage)
    if staged is None:
        stage.commit()
    last = counts - 1
    return logits[torch.arange(len(rows), device=last.device), last]


def _servable(model: object) -> TypeGuard[ServableModel]:
    """The serving seam (``cache_aware_lm.ServableModel``): blocks and head callable apart."""
    return callable(getattr(model, "run_blocks", None)) and hasattr(model, "lm_head")
