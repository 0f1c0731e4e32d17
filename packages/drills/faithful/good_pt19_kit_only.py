"""A stranger's PT19 from the kit's behaviour and this project's signature alone: the one
rejection the kit names (a nonpositive window, message naming the value), then
scaled_dot_product_attention in float64 with a bool band mask built from the positions,
enable_gqa, dropout_p=0.0, and NaN rows cleared afterwards."""

import torch.nn.functional as F

VARIABLE = "DRILL_PT19_MODULE"


def sliding_window_attention(q, k, v, query_positions, key_positions, key_valid, window):
    if window <= 0:
        raise ValueError(f"a sliding window of {window} positions sees nothing")
    gap = query_positions.unsqueeze(-1) - key_positions.unsqueeze(-2)  # [B, Tq, Tk]
    mask = (gap >= 0) & (gap < window) & key_valid.unsqueeze(-2)
    out = F.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), attn_mask=mask.unsqueeze(1), dropout_p=0.0,
        enable_gqa=True,
    )  # fmt: skip
    return out.nan_to_num(0.0).to(q.dtype)
