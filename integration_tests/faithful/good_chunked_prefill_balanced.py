"""Faithful alternative: balanced chunk widths, SimpleNamespace result, while loop."""

VARIABLE = "CHUNKED_PREFILL_MODULE"  # graded through this variable by `nox -s known_bad`

import math
from types import SimpleNamespace

import torch


def chunked_prefill(
    model,
    input_ids,
    positions,
    chunk_size,
    *,
    past_key_values=None,
    cache_lengths=None,
    cache_start_positions=None,
):
    T = input_ids.shape[1]
    n = math.ceil(T / chunk_size)
    base, extra = divmod(T, n)
    sizes = [base + (1 if i < extra else 0) for i in range(n)]
    state = dict(
        past_key_values=past_key_values,
        cache_lengths=cache_lengths,
        cache_start_positions=cache_start_positions,
    )
    pieces, begin = [], 0
    for size in sizes:
        out = model(
            input_ids[:, begin : begin + size],
            positions[:, begin : begin + size],
            use_cache=True,
            **state,
        )
        pieces.append(out.logits)
        state = dict(
            past_key_values=out.past_key_values,
            cache_lengths=out.cache_lengths,
            cache_start_positions=out.cache_start_positions,
        )
        begin += size
    return SimpleNamespace(
        logits=torch.cat(pieces, 1), chunk_sizes=tuple(sizes), chunk_count=len(sizes), **state
    )
