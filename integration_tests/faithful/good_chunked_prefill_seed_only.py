"""A stranger's chunked_prefill doing exactly the contract's work: torch.split, no checks.

Written from the contract page alone: the prompt and its positions are cut with
`torch.split` along the token axis, the cache is threaded through one cached call per
piece, and the result is a NamedTuple. No validation beyond what the page names (none).
"""

VARIABLE = "CHUNKED_PREFILL_MODULE"  # graded through this variable by `nox -s known_bad`

from typing import NamedTuple

import torch


class ChunkedPrefill(NamedTuple):
    logits: torch.Tensor
    past_key_values: tuple
    cache_lengths: torch.Tensor
    cache_start_positions: torch.Tensor
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
    state = (past_key_values, cache_lengths, cache_start_positions)
    pieces = []
    for ids, pos in zip(input_ids.split(chunk_size, dim=1), positions.split(chunk_size, dim=1)):
        out = model(
            ids,
            pos,
            past_key_values=state[0],
            cache_lengths=state[1],
            cache_start_positions=state[2],
            use_cache=True,
        )
        state = (out.past_key_values, out.cache_lengths, out.cache_start_positions)
        pieces.append(out.logits)
    sizes = tuple(piece.shape[1] for piece in pieces)
    return ChunkedPrefill(torch.cat(pieces, dim=1), *state, sizes, len(sizes))
