"""A stranger's PT19 that builds the band from column numbers (a lower-triangular band of
width `window` over Tq x Tk, anchored at the top left), ignoring the positions: right for
a square prefill, wrong for a chunk after a cache."""

import math

import torch

VARIABLE = "DRILL_PT19_MODULE"
EXPECTED_OWNER = "pt19"


def sliding_window_attention(q, k, v, query_positions, key_positions, key_valid, window):
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    Hq, Tq, D = q.shape[1], q.shape[2], q.shape[3]
    Tk = k.shape[2]
    rows = torch.arange(Tq, device=q.device)[:, None]
    cols = torch.arange(Tk, device=q.device)[None, :]
    band = (cols <= rows) & (cols > rows - window)
    allowed = band[None] & key_valid[:, None, :]
    kk = k.repeat_interleave(Hq // k.shape[1], dim=1)
    vv = v.repeat_interleave(Hq // k.shape[1], dim=1)
    scores = (q @ kk.transpose(-1, -2)) / math.sqrt(D)
    scores = scores.masked_fill(~allowed[:, None], -torch.inf)
    return scores.softmax(-1).nan_to_num(0.0) @ vv
