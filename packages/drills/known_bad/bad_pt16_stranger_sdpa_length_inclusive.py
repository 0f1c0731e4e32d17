"""A stranger's PT16 on scaled_dot_product_attention with K/V repeated per group, whose key
mask is `steps <= length`: one padding slot past each row's encoder length is attended."""

import torch
import torch.nn.functional as F

VARIABLE = "DRILL_PT16_MODULE"
EXPECTED_OWNER = "pt16"


def cross_attention_decode(q, encoder_k, encoder_v, encoder_lengths):
    if encoder_k.shape != encoder_v.shape:
        raise ValueError("encoder_k and encoder_v must have the same shape")
    Hq, Hkv, Te = q.shape[1], encoder_k.shape[1], encoder_k.shape[2]
    if Hq % Hkv:
        raise ValueError(f"q has {Hq} heads, not a multiple of encoder_k's {Hkv}")
    k = encoder_k.repeat_interleave(Hq // Hkv, dim=1)
    v = encoder_v.repeat_interleave(Hq // Hkv, dim=1)
    mask = torch.arange(Te, device=q.device) <= encoder_lengths[:, None]
    out = F.scaled_dot_product_attention(
        q[:, :, None], k, v, attn_mask=mask[:, None, None], dropout_p=0.0
    )
    return out[:, :, 0].nan_to_num(0.0)
