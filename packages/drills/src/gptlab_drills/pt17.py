"""PT17 rectangular causal mask from absolute positions (transfer case; owner P05).

A chunk of Tq queries after a cache attends Tk keys. Query i of row b may attend key j
iff the key is valid and its absolute position is not after the query's:

    allowed[b, 0, i, j] = key_valid[b, j] and key_positions[b, j] <= query_positions[b, i]

Only positions are compared, so prefill (Tq == Tk), one-token decode (Tq == 1), chunked
decode (0 < Tq < Tk, nonzero positions) and left padding (invalid keys first) are one
rule. The mask is built at Tq x Tk; never a square over the largest position.

Shapes: query_positions [B, Tq], key_positions [B, Tk] (integer), key_valid [B, Tk] bool
-> bool [B, 1, Tq, Tk], True = may attend.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def position_causal_mask(
    query_positions: Tensor, key_positions: Tensor, key_valid: Tensor
) -> Tensor:
    """bool [B, 1, Tq, Tk]: key valid and key position <= query position."""
    _check(query_positions, key_positions, key_valid)
    not_after = key_positions[:, None, :] <= query_positions[:, :, None]  # [B, Tq, Tk]
    return (not_after & key_valid[:, None, :])[:, None]


def _check(query_positions: Tensor, key_positions: Tensor, key_valid: Tensor) -> None:
    """Reject bad shapes, dtypes and decreasing positions before anything is built."""
    for name, tensor in (("query_positions", query_positions), ("key_positions", key_positions)):
        if not isinstance(tensor, Tensor) or tensor.dim() != 2 or tensor.is_meta:
            raise ValueError(f"{name} must be a 2-D tensor with data, got {described(tensor)}")
        if tensor.is_floating_point() or tensor.dtype == torch.bool or tensor.is_complex():
            raise ValueError(f"{name} must hold integer positions, got {tensor.dtype}")
    if not isinstance(key_valid, Tensor) or key_valid.dtype != torch.bool or key_valid.is_meta:
        raise ValueError(f"key_valid must be a bool tensor, got {described(key_valid)}")
    if key_valid.shape != key_positions.shape:
        raise ValueError(
            f"key_valid {tuple(key_valid.shape)} and key_positions "
            f"{tuple(key_positions.shape)} differ in shape"
        )
    if query_positions.shape[0] != key_positions.shape[0]:
        raise ValueError(
            f"query_positions has {query_positions.shape[0]} rows, "
            f"key_positions {key_positions.shape[0]}"
        )
    devices = {query_positions.device, key_positions.device, key_valid.device}
    if len(devices) != 1:
        raise ValueError(f"query_positions, key_positions, key_valid devices differ: {devices}")
    if bool((query_positions[:, 1:] < query_positions[:, :-1]).any()):
        raise ValueError("query_positions decrease within a row")
    # Valid keys must not go back in position; invalid (padding) keys may hold anything,
    # so compare each valid key with the largest valid position before it.
    lowest = torch.iinfo(key_positions.dtype).min
    seen = torch.where(key_valid, key_positions, lowest).cummax(dim=1).values
    if bool((key_valid[:, 1:] & (key_positions[:, 1:] < seen[:, :-1])).any()):
        raise ValueError("key_positions of valid keys decrease within a row")


__all__ = ["position_causal_mask"]
