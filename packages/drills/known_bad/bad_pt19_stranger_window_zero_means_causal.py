"""A stranger's PT19 that takes a window below 1 to mean "no window" (plain causal
attention) instead of rejecting it."""

import math

import torch

VARIABLE = "DRILL_PT19_MODULE"
EXPECTED_OWNER = "pt19"


def sliding_window_attention(q, k, v, query_positions, key_positions, key_valid, window):
    qpos, kpos = query_positions[:, :, None], key_positions[:, None, :]
    allowed = key_valid[:, None, :] & (kpos <= qpos)
    if window >= 1:
        allowed = allowed & (kpos > qpos - window)
    Hq, D = q.shape[1], q.shape[3]
    kk = k.repeat_interleave(Hq // k.shape[1], dim=1)
    vv = v.repeat_interleave(Hq // k.shape[1], dim=1)
    scores = (q @ kk.transpose(-1, -2)) / math.sqrt(D)
    scores = scores.masked_fill(~allowed[:, None], -torch.inf)
    return scores.softmax(-1).nan_to_num(0.0) @ vv
