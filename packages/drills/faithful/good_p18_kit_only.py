"""A stranger's P18 from the kit's words alone: K/V heads repeated to the query heads, scores
by matmul in fp32, a boolean mask turned into -inf, softmax over the keys; no validation (the
kit names none), the rest left to torch."""

import math

import torch

VARIABLE = "DRILL_P18_MODULE"


def reference_attention(q, k, v, attn_mask=None, *, is_causal=False, scale=None):
    group = q.shape[1] // k.shape[1]
    keys = k.float().repeat_interleave(group, dim=1)
    values = v.float().repeat_interleave(group, dim=1)
    factor = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q.float() @ keys.transpose(-2, -1) * factor
    if is_causal:
        length, keys_seen = scores.shape[-2:]
        allowed = torch.ones(length, keys_seen, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask.float()
    return (scores.softmax(dim=-1) @ values).to(q.dtype)
