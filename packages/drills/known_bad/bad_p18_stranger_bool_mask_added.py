"""A stranger's attention adds every mask to the scores, so a boolean mask becomes a +1
bias on allowed keys instead of blocking the others."""

import math

import torch

VARIABLE = "DRILL_P18_MODULE"
EXPECTED_OWNER = "p18"


def reference_attention(q, k, v, attn_mask=None, *, is_causal=False, scale=None):
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError("q, k, v must be 4-D")
    if k.shape[:3] != v.shape[:3] or k.shape[-1] != q.shape[-1] or q.shape[1] % k.shape[1]:
        raise ValueError("k / v do not fit q")
    L, S = q.shape[2], k.shape[2]
    if attn_mask is not None and attn_mask.shape[-1] != S:
        raise ValueError("attn_mask does not fit the scores")
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, 1).float(), v.repeat_interleave(rep, 1).float()
    s = q.float() @ k.transpose(-1, -2) * (scale or 1 / math.sqrt(q.shape[-1]))
    if is_causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    if attn_mask is not None:
        s = s + attn_mask.to(s.dtype)
    return (s.softmax(-1) @ v).to(q.dtype)
