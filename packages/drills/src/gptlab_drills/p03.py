"""P03 split and merge heads: [B, T, C] <-> [B, H, T, D] with C = H * D.

Channel c of token t belongs to head c // D at feature c % D: the channels are cut into
H contiguous blocks of D. Splitting is a view then a transpose (no copy); merging must
transpose back *before* it flattens, so it copies into a contiguous [B, T, C].

Shapes: split_heads x [B, T, C], heads H (C % H == 0) -> [B, H, T, D], a view of x with
strides (T*C, D, C, 1) when x is contiguous; merge_heads x [B, H, T, D] -> [B, T, H*D], contiguous.
"""

from __future__ import annotations

from torch import Tensor

from ._describe import described


def split_heads(x: Tensor, heads: int) -> Tensor:
    """[B, T, C] -> [B, H, T, D]: out[b, h, t, d] = x[b, t, h * D + d] (a view of x)."""
    if not isinstance(x, Tensor) or x.dim() != 3:
        raise ValueError(f"x must be a 3-D tensor [B, T, C], got {described(x)}")
    if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1:
        raise ValueError(f"heads must be a positive int, got {heads!r}")
    B, T, C = x.shape
    if C == 0:
        raise ValueError(f"x has no channels to split into heads, got {described(x)}")
    if C % heads:
        raise ValueError(f"heads = {heads} does not divide x's channel count C = {C}")
    # Cut the channel axis into [H, D] first (channels stay where they are), then move
    # the head axis in front of time: the transpose is what makes each head's rows.
    # reshape is a view whenever x's channel axis is dense (always for a contiguous x).
    return x.reshape(B, T, heads, C // heads).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """[B, H, T, D] -> [B, T, H * D]: the inverse of split_heads, always contiguous."""
    if not isinstance(x, Tensor) or x.dim() != 4:
        raise ValueError(f"x must be a 4-D tensor [B, H, T, D], got {described(x)}")
    B, H, T, D = x.shape
    # Transpose back to [B, T, H, D] before flattening; reshape copies the (now
    # non-contiguous) layout, a view() here would raise on the split's output.
    return x.transpose(1, 2).reshape(B, T, H * D).contiguous()


__all__ = ["merge_heads", "split_heads"]
