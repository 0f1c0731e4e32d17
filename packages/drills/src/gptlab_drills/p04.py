"""P04 GQA K/V expansion: give every query head the kv head it shares.

With Hq query heads over Hkv kv heads (Hq % Hkv == 0, group = Hq // Hkv), query head h
reads kv head h // group: each kv head is repeated `group` times *next to itself*
(repeat_interleave), never the whole block of heads tiled (repeat), which would pair
query head h with kv head h % Hkv.

Shapes: kv [B, Hkv, T, D], query_heads Hq -> [B, Hq, T, D], out[:, h] == kv[:, h // group].
"""

from __future__ import annotations

from torch import Tensor

from ._describe import described


def repeat_kv_for_gqa(kv: Tensor, query_heads: int) -> Tensor:
    """[B, Hkv, T, D] -> [B, Hq, T, D] with out[:, h] = kv[:, h // (Hq // Hkv)]."""
    if not isinstance(kv, Tensor) or kv.dim() != 4:
        raise ValueError(f"kv must be a 4-D tensor [B, Hkv, T, D], got {described(kv)}")
    if isinstance(query_heads, bool) or not isinstance(query_heads, int) or query_heads < 1:
        raise ValueError(f"query_heads must be a positive int, got {query_heads!r}")
    B, Hkv, T, D = kv.shape
    if Hkv == 0 or query_heads % Hkv:
        raise ValueError(f"query_heads = {query_heads} is not a multiple of kv's {Hkv} heads")
    if B * query_heads * T * D >= 2**63:
        raise ValueError(f"query_heads = {query_heads} gives more elements than int64 counts")
    group = query_heads // Hkv
    if group == 1:
        return kv  # nothing to repeat: the caller gets kv itself (read-only by contract)
    # expand is free (stride 0 on the new group axis); the reshape then copies once into
    # [B, Hq, T, D], each kv head's copies adjacent.
    return kv[:, :, None].expand(B, Hkv, group, T, D).reshape(B, query_heads, T, D)


__all__ = ["repeat_kv_for_gqa"]
