"""The reference path: gather a batch's blocks into a cache-aware model's inputs.

    past, lengths, starts = cache.model_inputs(ids)       # copies through the block tables
    out = model(input_ids, positions, past, lengths, starts, use_cache=True)
    cache.append(ids, input_ids, positions, new tokens' K/V of out.past_key_values)

Clear and correct for any model satisfying ``cache_aware_lm.CacheAwareModel``; it
copies every row's K/V twice per call (the gather, and the model's functional
cache). ``paged_attention.paged_forward_fast`` is the copy-free path.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import torch
from torch import Tensor

from cache_aware_lm import CacheAwareModel

from .cache import PagedKVCache
from .call_checks import check_call
from .pool import PastKeyValues


def new_token_kv(
    past_key_values: PastKeyValues, old_lengths: Tensor, new_tokens: int
) -> PastKeyValues:
    """Row b's slots ``old_lengths[b] .. old_lengths[b] + T - 1`` of a returned cache."""
    index_BT = old_lengths[:, None] + torch.arange(new_tokens, device=old_lengths.device)

    def cut(full_BHSD: Tensor) -> Tensor:
        B, H, _, D = full_BHSD.shape
        return full_BHSD.gather(2, index_BT[:, None, :, None].expand(B, H, new_tokens, D))

    return tuple((cut(key), cut(value)) for key, value in past_key_values)


@torch.no_grad()
def paged_forward(
    model: CacheAwareModel,
    cache: PagedKVCache,
    request_ids: Sequence[Hashable],
    input_ids: Tensor,
    positions: Tensor,
) -> Tensor:
    """Run ``input_ids`` ``[B, T]`` (each row continuing its request) and store their K/V.

    Returns the logits ``[B, T, V]``: equal to recomputing every row from its start.
    """
    check_call(model, cache, request_ids, input_ids, positions, servable=False)
    past, lengths, starts = cache.model_inputs(request_ids)
    output = model(input_ids, positions, past, lengths, starts, use_cache=True)
    if output.past_key_values is None:
        raise ValueError("the model returned no cache although use_cache=True was passed")
    old_lengths = torch.zeros_like(input_ids[:, 0]) if lengths is None else lengths
    delta = new_token_kv(output.past_key_values, old_lengths, input_ids.shape[1])
    cache.append(request_ids, input_ids, positions, delta)
    return output.logits
