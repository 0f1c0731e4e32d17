"""Helpers for suites that move a model's functional cache into request storage.

A cache-aware model returns K/V for the whole sequence (past + new). Request
storage (`KVCache.append`) takes only the new tokens' K/V, `[B, H_kv, T, D]`
per layer: row b's delta is its returned cache's slots `old_length[b] ..
old_length[b] + T - 1`. These helpers cut that delta, build padded mixed-length
caches from per-row ones, and read storage data pointers.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from gptlab_testkit.tensors import LayerKV, PastKeyValues


def new_token_kv(
    past_key_values: Sequence[LayerKV], old_lengths: Tensor | Sequence[int], new_tokens: int
) -> PastKeyValues:
    """The appended tokens' K/V: row b's slots `old_lengths[b] : old_lengths[b] + new_tokens`."""
    lengths = [int(length) for length in old_lengths]

    def cut(full_BHSD: Tensor) -> Tensor:
        return torch.stack(
            [full_BHSD[b, :, length : length + new_tokens] for b, length in enumerate(lengths)]
        )

    return tuple((cut(key), cut(value)) for key, value in past_key_values)


def pad_rows(rows: Sequence[Sequence[LayerKV]], fill: float) -> PastKeyValues:
    """Stack one-row caches `[1, H, S_b, D]` into `[B, H, max S_b, D]`, padding with `fill`."""
    longest = max(row[0][0].shape[2] for row in rows)

    def padded(tensors: Sequence[Tensor]) -> Tensor:
        first = tensors[0]
        out = first.new_full((len(tensors), first.shape[1], longest, first.shape[3]), fill)
        for b, tensor in enumerate(tensors):
            out[b, :, : tensor.shape[2]] = tensor[0]
        return out

    layer_count = len(rows[0])
    return tuple(
        (
            padded([row[layer][0] for row in rows]),
            padded([row[layer][1] for row in rows]),
        )
        for layer in range(layer_count)
    )


def data_pointers(past_key_values: Sequence[LayerKV]) -> list[tuple[object, object]]:
    """(key, value) data pointers per layer: equal before and after means nothing reallocated
    (in judge mode, the worker's pointers as it reported them: `worker_facts`)."""
    from gptlab_testkit.judge.worker_facts import data_ptr

    return [(data_ptr(key), data_ptr(value)) for key, value in past_key_values]


__all__ = ["data_pointers", "new_token_kv", "pad_rows"]
