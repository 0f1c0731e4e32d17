"""A stranger's P18 from the README contract alone: einsum over grouped heads (no K/V
repeat), an explicit max-subtracted exp for the softmax, boolean masks turned additive."""

import torch

VARIABLE = "DRILL_P18_MODULE"


def reference_attention(q, k, v, attn_mask=None, *, is_causal=False, scale=None):
    if attn_mask is not None:
        if not torch.is_tensor(attn_mask):
            raise TypeError("attn_mask must be a tensor")
        if attn_mask.dtype != torch.bool and not attn_mask.dtype.is_floating_point:
            raise TypeError(f"attn_mask of {attn_mask.dtype} is neither bool nor float")
        if attn_mask.ndim > 4:
            raise ValueError("attn_mask has too many dims")
    if type(is_causal) is not bool:
        raise TypeError(f"is_causal={is_causal!r} is not a bool")
    if scale is not None and (
        type(scale) not in (int, float) or scale != scale or abs(scale) == float("inf")
    ):
        raise ValueError(f"scale={scale!r} is not a finite number")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.ndim != 4:
            raise ValueError(f"{name} must be [B, H, T, D]")
        if t.dtype != q.dtype or not t.dtype.is_floating_point:
            raise ValueError(f"{name} has dtype {t.dtype}; q has {q.dtype}")
    b, hq, L, d = q.shape
    _, hkv, S, dk = k.shape
    if hq % hkv:
        raise ValueError(f"q heads {hq} not divisible by k heads {hkv}")
    if dk != d or k.shape[0] != b:
        raise ValueError("k does not fit q")
    if v.shape[:3] != k.shape[:3]:
        raise ValueError("v does not fit k")
    if attn_mask is not None:
        for have, want in zip(reversed(attn_mask.shape), (S, L, hq, b)):
            if have not in (1, want):
                raise ValueError(f"attn_mask {tuple(attn_mask.shape)} does not broadcast")
    g = hq // hkv
    qg = q.float().reshape(b, hkv, g, L, d)
    scores = torch.einsum("bkgld,bksd->bkgls", qg, k.float()).reshape(b, hq, L, S)
    scores = scores * (d**-0.5 if scale is None else scale)
    bias = torch.zeros(L, S, device=q.device)
    if is_causal:
        bias = bias.masked_fill(torch.ones(L, S, dtype=torch.bool).tril().logical_not(), -torch.inf)
    scores = scores + bias
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), -torch.inf)
        else:
            scores = scores + attn_mask.float()
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    w = (e / e.sum(dim=-1, keepdim=True)).reshape(b, hkv, g, L, S)
    out = torch.einsum("bkgls,bksd->bkgld", w, v.float())
    return out.reshape(b, hq, L, v.shape[-1]).to(q.dtype)
