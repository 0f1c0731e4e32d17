"""A stranger's PT20 that runs the sequences longest first (to batch similar lengths) and
concatenates their outputs in that order: each sequence is right, but the flat order is not
restored, so row n is no longer query n."""

import itertools

import torch
import torch.nn.functional as F

VARIABLE = "DRILL_PT20_MODULE"
EXPECTED_OWNER = "pt20"


def varlen_attention(q, k, v, cu_seqlens, scale=None):
    group = q.shape[1] // k.shape[1]
    bounds = cu_seqlens.tolist()
    spans = sorted(itertools.pairwise(bounds), key=lambda s: s[0] - s[1])
    outputs = [q.new_zeros(0, q.shape[1], q.shape[2])]
    for start, end in spans:
        if end == start:
            continue
        qs = q[start:end].transpose(0, 1)
        ks = k[start:end].repeat_interleave(group, dim=1).transpose(0, 1)
        vs = v[start:end].repeat_interleave(group, dim=1).transpose(0, 1)
        outputs.append(
            F.scaled_dot_product_attention(qs, ks, vs, is_causal=True, scale=scale).transpose(0, 1)
        )
    return torch.cat(outputs)
