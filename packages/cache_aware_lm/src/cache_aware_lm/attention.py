"""Attention over a cache: head split/merge and masked (grouped-query) attention."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch.nn import functional

from tinygpt import ArgumentTypeError

# (query [B, H, T, D], keys [B, H_kv, S, D], values, mask [B, 1, T, S]) -> [B, H, T, D]
AttentionKernel = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """[B, T, H*D] -> [B, H, T, D]."""
    B, T, C = x.shape
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """[B, H, T, D] -> [B, T, H*D]."""
    B, H, T, D = x.shape
    return x.transpose(1, 2).reshape(B, T, H * D)


def check_attention_inputs(query: object, keys: object, values: object, mask: object) -> None:
    """Shapes ``[B, H, T, D]``, ``[B, H_kv, S, D]`` twice, bool ``[B, 1, T, S]``; H_kv | H;
    one float dtype and one device. Python comparisons only: no device reads.

    A well-formed call (the per-layer hot path) passes one combined test; only a
    malformed one walks the detailed checks below to name what is wrong.
    """
    if _well_formed(query, keys, values, mask):
        return
    named = {"query": query, "keys": keys, "values": values, "mask": mask}
    for name, value in named.items():
        if not isinstance(value, Tensor):
            raise ArgumentTypeError(f"{name} must be a Tensor, got {type(value).__name__}")
        if value.dim() != 4:
            raise ValueError(f"{name} must be 4-d, got shape {tuple(value.shape)}")
    assert isinstance(query, Tensor) and isinstance(keys, Tensor)
    assert isinstance(values, Tensor) and isinstance(mask, Tensor)
    B, H, T, D = query.shape
    H_kv, S = keys.shape[1], keys.shape[2]
    if keys.shape[0] != B or keys.shape[3] != D or H_kv == 0:
        raise ValueError(
            f"keys must be [{B}, H_kv, S, {D}] (the query's batch and head dim), "
            f"got {tuple(keys.shape)}"
        )
    if values.shape != keys.shape:
        raise ValueError(
            f"values must have the keys' shape {tuple(keys.shape)}, got {tuple(values.shape)}"
        )
    if H % H_kv != 0:
        raise ValueError(f"query heads ({H}) must be a multiple of key/value heads ({H_kv})")
    if mask.dtype != torch.bool or tuple(mask.shape) != (B, 1, T, S):
        raise ValueError(
            f"mask must be bool [{B}, 1, {T}, {S}] (query [B, H, T, D], keys [B, H_kv, S, D]), "
            f"got {mask.dtype} {tuple(mask.shape)}"
        )
    if not query.is_floating_point() or keys.dtype != query.dtype or values.dtype != query.dtype:
        raise ValueError(
            f"query, keys and values must share one float dtype, got "
            f"{query.dtype}, {keys.dtype}, {values.dtype}"
        )
    for name, value in (("keys", keys), ("values", values), ("mask", mask)):
        if value.device != query.device:
            raise ValueError(f"{name} is on {value.device}, query on {query.device}")


def _well_formed(query: object, keys: object, values: object, mask: object) -> bool:
    if not (
        isinstance(query, Tensor)
        and isinstance(keys, Tensor)
        and isinstance(values, Tensor)
        and isinstance(mask, Tensor)
    ):
        return False
    q, k = query.shape, keys.shape
    return (
        len(q) == 4
        and len(k) == 4
        and values.shape == k
        and k[0] == q[0]
        and k[3] == q[3]
        and k[1] > 0
        and q[1] % k[1] == 0
        and mask.shape == (q[0], 1, q[2], k[2])
        and mask.dtype is torch.bool
        and query.is_floating_point()
        and keys.dtype is query.dtype
        and values.dtype is query.dtype
        and keys.device == query.device
        and values.device == query.device
        and mask.device == query.device
    )


def grouped_query_attention(query: Tensor, keys: Tensor, values: Tensor, mask: Tensor) -> Tensor:
    """Masked attention of ``[B, H, T, D]`` queries over ``[B, H_kv, S, D]`` keys/values.

    Query head h reads key/value head ``h // (H / H_kv)``: each key/value head is
    repeated for its group right before the call (H_kv == H is ordinary
    multi-head attention). ``mask`` is boolean ``[B, 1, T, S]``, True = may attend.
    """
    check_attention_inputs(query, keys, values, mask)
    group_size = query.shape[1] // keys.shape[1]
    if group_size > 1:
        keys = keys.repeat_interleave(group_size, dim=1)
        values = values.repeat_interleave(group_size, dim=1)
    return functional.scaled_dot_product_attention(query, keys, values, attn_mask=mask)


def folded_grouped_query_attention(
    query: Tensor, keys: Tensor, values: Tensor, mask: Tensor
) -> Tensor:
    """``grouped_query_attention`` without copying the keys and values (the serving kernel).

    Instead of repeating each key/value head G = H / H_kv times, the G query heads
    of a group are folded into the query-length axis: ``[B, H, T, D]`` ->
    ``[B, H_kv, G * T, D]``, and the mask is repeated per group (``[B, 1, G * T, S]``,
    small). The dot products are the same; K/V are read in place, so reading a
    long stored prefix costs no copy per step.
    """
    check_attention_inputs(query, keys, values, mask)
    B, H, T, D = query.shape
    H_kv = keys.shape[1]
    G = H // H_kv
    if G == 1:
        return functional.scaled_dot_product_attention(query, keys, values, attn_mask=mask)
    # Query head h = kv_head * G + g reads kv head h // G, as repeat_interleave does.
    query_folded = query.reshape(B, H_kv, G * T, D)
    # One query per row (decode): its [B, 1, 1, S] mask already broadcasts over G rows.
    mask_folded = (
        mask
        if T == 1
        else mask[:, :, None].expand(B, 1, G, T, mask.shape[-1]).reshape(B, 1, G * T, -1)
    )
    out = functional.scaled_dot_product_attention(query_folded, keys, values, attn_mask=mask_folded)
    return out.reshape(B, H, T, D)
