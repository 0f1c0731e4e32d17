"""A stranger's P19 from the README contract alone: checks lengths first, expands the kv
heads with repeat_interleave, lets SDPA apply a boolean slot mask, under inference_mode."""

import torch
import torch.nn.functional as F

VARIABLE = "DRILL_P19_MODULE"


@torch.inference_mode()
def decode_attention(q, k_cache, v_cache, lengths):
    if not isinstance(lengths, torch.Tensor) or lengths.ndim != 1:
        raise ValueError("lengths must be a 1-D integer tensor")
    if lengths.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"lengths has dtype {lengths.dtype}")
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("lengths", lengths)):
        if t.is_meta:
            raise ValueError(f"{name} is on the meta device")
        if name != "lengths" and (not t.is_floating_point() or t.dtype != q.dtype):
            raise TypeError(f"{name} has dtype {t.dtype}, q has {q.dtype}")
    if q.ndim != 4 or q.shape[2] != 1:
        raise ValueError(f"q must be [B, Hq, 1, D], got {tuple(q.shape)}")
    if k_cache.shape != v_cache.shape or k_cache.ndim != 4:
        raise ValueError("k_cache and v_cache must be equal-shaped [B, Hkv, S, D]")
    b, hq, _, d = q.shape
    _, hkv, s, dk = k_cache.shape
    if k_cache.shape[0] != b or dk != d or hq % hkv != 0:
        raise ValueError("q does not fit k_cache (batch, head dim, or Hq % Hkv)")
    if lengths.shape[0] != b:
        raise ValueError("lengths needs one entry per row")
    if (lengths <= 0).any() or (lengths > s).any():
        raise ValueError("lengths must lie in 1..S")
    keep = torch.arange(s, device=q.device).unsqueeze(0) < lengths.unsqueeze(1)
    # where() rather than trusting the mask: 0 * NaN in the capacity would still be NaN.
    k = torch.where(keep[:, None, :, None], k_cache, 0).repeat_interleave(hq // hkv, dim=1).float()
    v = torch.where(keep[:, None, :, None], v_cache, 0).repeat_interleave(hq // hkv, dim=1).float()
    out = F.scaled_dot_product_attention(q.float(), k, v, attn_mask=keep[:, None, None, :])
    return out.to(q.dtype)
