"""Attention over a cache: head split/merge and masked (grouped-query) attention."""

from __future__ import annotations

from torch import Tensor
from torch.nn import functional


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """[B, T, H*D] -> [B, H, T, D]."""
    B, T, C = x.shape
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """[B, H, T, D] -> [B, T, H*D]."""
    B, H, T, D = x.shape
    return x.transpose(1, 2).reshape(B, T, H * D)


def grouped_query_attention(query: Tensor, keys: Tensor, values: Tensor, mask: Tensor) -> Tensor:
    """Masked attention of ``[B, H, T, D]`` queries over ``[B, H_kv, S, D]`` keys/values.

    Query head h reads key/value head ``h // (H / H_kv)``: each key/value head is
    repeated for its group right before the call (H_kv == H is ordinary
    multi-head attention). ``mask`` is boolean ``[B, 1, T, S]``, True = may attend.
    """
    if query.shape[1] % keys.shape[1] != 0:
        raise ValueError(
            f"query heads ({query.shape[1]}) must be a multiple of "
            f"key/value heads ({keys.shape[1]})"
        )
    group_size = query.shape[1] // keys.shape[1]
    if group_size > 1:
        keys = keys.repeat_interleave(group_size, dim=1)
        values = values.repeat_interleave(group_size, dim=1)
    return functional.scaled_dot_product_attention(query, keys, values, attn_mask=mask)
