"""PT05 packed QKV unpacker (transfer case; owner M04).

A fused QKV projection writes each token's row as all query heads, then all key heads,
then all value heads, each head head_dim wide:

    packed[n] = [q_0 .. q_{Hq-1} | k_0 .. k_{Hkv-1} | v_0 .. v_{Hkv-1}]

Unpacking splits the last dim at Hq*D and (Hq+Hkv)*D and views each part as heads.
Splitting one dim never needs a copy, so Q, K and V are views of packed for any strides
(a column slice of a wider buffer, every other row, a transposed buffer): writing one
writes packed, and packed must outlive them.

Shapes: packed [N, (Hq + 2*Hkv) * D], Hq a multiple of Hkv -> Q [N, Hq, D],
K [N, Hkv, D], V [N, Hkv, D] (packed's dtype and device).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def unpack_qkv(
    packed: Tensor, query_heads: int, kv_heads: int, head_dim: int
) -> tuple[Tensor, Tensor, Tensor]:
    """(Q [N, Hq, D], K [N, Hkv, D], V [N, Hkv, D]), views of packed."""
    _check(packed, query_heads, kv_heads, head_dim)
    kv_width = kv_heads * head_dim
    q, k, v = torch.split(packed, [query_heads * head_dim, kv_width, kv_width], dim=-1)
    N = packed.shape[0]
    return (
        q.view(N, query_heads, head_dim),
        k.view(N, kv_heads, head_dim),
        v.view(N, kv_heads, head_dim),
    )


def _check(packed: Tensor, query_heads: int, kv_heads: int, head_dim: int) -> None:
    """Reject kinds, head counts and a width that is not (Hq + 2*Hkv) * D."""
    if not isinstance(packed, Tensor) or packed.dim() != 2:
        raise ValueError(f"packed must be a 2-D tensor [N, W], got {described(packed)}")
    for name, value in (
        ("query_heads", query_heads),
        ("kv_heads", kv_heads),
        ("head_dim", head_dim),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if query_heads % kv_heads:
        raise ValueError(f"query_heads {query_heads} is not a multiple of kv_heads {kv_heads}")
    width = (query_heads + 2 * kv_heads) * head_dim
    if packed.shape[1] != width:
        raise ValueError(
            f"packed's last dim is {packed.shape[1]}, want (query_heads + 2 * kv_heads) * "
            f"head_dim = {width}"
        )


__all__ = ["unpack_qkv"]
