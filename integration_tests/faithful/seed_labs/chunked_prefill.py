# chunked-prefill reference attempt: thread the functional cache through bounded chunks.
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class ChunkedPrefill:
    logits: Tensor
    past_key_values: tuple
    cache_lengths: Tensor
    cache_start_positions: Tensor
    chunk_sizes: tuple
    chunk_count: int


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
    if type(chunk_size) is not int or chunk_size <= 0:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    pkv, lens, starts = past_key_values, cache_lengths, cache_start_positions
    logits, sizes = [], []
    with torch.inference_mode():
        for a in range(0, input_ids.shape[1], chunk_size):
            out = model(
                input_ids[:, a : a + chunk_size],
                positions[:, a : a + chunk_size],
                past_key_values=pkv,
                cache_lengths=lens,
                cache_start_positions=starts,
                use_cache=True,
            )
            pkv, lens, starts = out.past_key_values, out.cache_lengths, out.cache_start_positions
            logits.append(out.logits)
            sizes.append(out.logits.shape[1])
        return ChunkedPrefill(torch.cat(logits, 1), pkv, lens, starts, tuple(sizes), len(sizes))
