"""A stranger's grouped-query decode tiles the kv heads (`repeat`) instead of repeating each
one next to itself (`repeat_interleave`): query head h reads kv head h % Hkv."""

import torch
import torch.nn.functional as F

VARIABLE = "DRILL_P19_MODULE"
EXPECTED_OWNER = "p19"


def decode_attention(q, k_cache, v_cache, lengths):
    B, Hq, T, _ = q.shape
    Hkv, S = k_cache.shape[1], k_cache.shape[2]
    if T != 1:
        raise ValueError("q must have one token")
    if k_cache.shape != v_cache.shape or Hq % Hkv:
        raise ValueError("k_cache / v_cache do not fit q")
    if lengths.shape != (B,) or bool(((lengths < 1) | (lengths > S)).any()):
        raise ValueError("lengths out of range")
    k = k_cache.repeat(1, Hq // Hkv, 1, 1)
    v = v_cache.repeat(1, Hq // Hkv, 1, 1)
    mask = torch.arange(S, device=q.device)[None, :] < lengths[:, None]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :])
