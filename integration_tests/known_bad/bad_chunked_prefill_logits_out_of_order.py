"""Chunk logits are concatenated last chunk first, not in prompt order."""

import dataclasses

import torch

import chunked_prefill as reference

VARIABLE = "CHUNKED_PREFILL_MODULE"
EXPECTED_OWNER = "chunked_metadata"

__all__ = ["chunked_prefill"]


def chunked_prefill(model, input_ids, positions, chunk_size, **cache):
    output = reference.chunked_prefill(model, input_ids, positions, chunk_size, **cache)
    chunk_logits = output.logits.split(list(output.chunk_sizes), dim=1)
    # mistake: the per-chunk logits list was built by prepending (or iterated reversed)
    return dataclasses.replace(output, logits=torch.cat(chunk_logits[::-1], dim=1))
