"""A stranger's PT16 that keeps the training recipe: attention dropout of 0.1 applied to the
weights (F.dropout's training defaults to True), so an inference call is random."""

import math

import torch
import torch.nn.functional as F

VARIABLE = "DRILL_PT16_MODULE"
EXPECTED_OWNER = "pt16"


def cross_attention_decode(q, encoder_k, encoder_v, encoder_lengths):
    if encoder_k.shape != encoder_v.shape:
        raise ValueError("encoder_k and encoder_v must have the same shape")
    Hq, D = q.shape[1], q.shape[2]
    Hkv, Te = encoder_k.shape[1], encoder_k.shape[2]
    if Hq % Hkv:
        raise ValueError(f"q has {Hq} heads, not a multiple of encoder_k's {Hkv}")
    k = encoder_k.repeat_interleave(Hq // Hkv, dim=1)
    v = encoder_v.repeat_interleave(Hq // Hkv, dim=1)
    scores = torch.einsum("bhd,bhtd->bht", q, k) / math.sqrt(D)
    keep = torch.arange(Te, device=q.device) < encoder_lengths[:, None]
    scores = scores.masked_fill(~keep[:, None], -torch.inf)
    weights = F.dropout(scores.softmax(-1).nan_to_num(0.0), p=0.1)
    return torch.einsum("bht,bhtd->bhd", weights, v)
