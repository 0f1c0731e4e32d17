"""A stranger's PT16 from the kit's words alone: the two rejections the kit names (K/V
shapes, a head ratio, checked in the other order, messages naming the values),
scaled_dot_product_attention in float64 with enable_gqa and dropout_p=0.0 passed
explicitly, and the NaN of a zero-length row replaced by 0 afterwards."""

import torch
import torch.nn.functional as F

VARIABLE = "DRILL_PT16_MODULE"


def cross_attention_decode(q, encoder_k, encoder_v, encoder_lengths):
    heads, kv_heads = q.shape[1], encoder_k.shape[1]
    if heads % kv_heads != 0:
        raise ValueError(f"{heads} query heads cannot share {kv_heads} key/value heads")
    if tuple(encoder_k.shape) != tuple(encoder_v.shape):
        raise ValueError(
            f"encoder_k is {tuple(encoder_k.shape)}, encoder_v {tuple(encoder_v.shape)}"
        )
    steps = torch.arange(encoder_k.shape[2], device=q.device)
    mask = (steps[None, :] < encoder_lengths[:, None]).view(q.shape[0], 1, 1, -1)
    out = F.scaled_dot_product_attention(
        q.double().unsqueeze(2), encoder_k.double(), encoder_v.double(), attn_mask=mask,
        dropout_p=0.0, enable_gqa=True,
    )  # fmt: skip
    return torch.nan_to_num(out.squeeze(2), nan=0.0).to(q.dtype)
