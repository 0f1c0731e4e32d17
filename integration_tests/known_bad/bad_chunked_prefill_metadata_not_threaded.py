"""Each chunk gets the previous chunk's K/V but the caller's original lengths and starts."""

import torch

from chunked_prefill import ChunkedPrefillOutput, chunk_sizes_for

VARIABLE = "CHUNKED_PREFILL_MODULE"
EXPECTED_OWNER = "chunked_metadata"

__all__ = ["chunked_prefill"]


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
    sizes = chunk_sizes_for(input_ids.shape[1], chunk_size)
    past, logits, offset = past_key_values, [], 0
    for size in sizes:
        output = model(
            input_ids[:, offset : offset + size],
            positions[:, offset : offset + size],
            past_key_values=past,
            cache_lengths=cache_lengths,  # mistake: never advanced to output.cache_lengths
            cache_start_positions=cache_start_positions,
            use_cache=True,
        )
        logits.append(output.logits)
        past = output.past_key_values
        offset += size
    return ChunkedPrefillOutput(
        logits=torch.cat(logits, dim=1),
        past_key_values=past,
        cache_lengths=output.cache_lengths,
        cache_start_positions=output.cache_start_positions,
        chunk_sizes=sizes,
    )
