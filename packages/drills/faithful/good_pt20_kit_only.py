"""A stranger's PT20 from the kit's words alone: one slice per sequence, each run through
torch's scaled_dot_product_attention with is_causal=True (GQA by repeating K/V heads), in
float64, written back into the rows it came from; nothing validated."""

import itertools

import torch
import torch.nn.functional as F

VARIABLE = "DRILL_PT20_MODULE"


def varlen_attention(q, k, v, cu_seqlens, scale=None):
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    group = q.shape[1] // k.shape[1]
    bounds = cu_seqlens.tolist()
    for start, end in itertools.pairwise(bounds):
        if end == start:
            continue
        qs = q[start:end].double().transpose(0, 1)  # [Hq, n, D]
        ks = k[start:end].double().repeat_interleave(group, dim=1).transpose(0, 1)
        vs = v[start:end].double().repeat_interleave(group, dim=1).transpose(0, 1)
        attended = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True, scale=scale)
        out[start:end] = attended.transpose(0, 1)
    return out.to(q.dtype)
