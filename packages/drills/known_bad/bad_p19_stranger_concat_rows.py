"""A stranger's decode slices each row's valid prefix and concatenates the rows' outputs
(right numbers, but a concatenation in the decode hot path)."""

import math

import torch

VARIABLE = "DRILL_P19_MODULE"
EXPECTED_OWNER = "p19"


def decode_attention(q, k_cache, v_cache, lengths):
    B, Hq, T, D = q.shape
    Hkv, S = k_cache.shape[1], k_cache.shape[2]
    if T != 1 or Hq % Hkv or k_cache.shape != v_cache.shape or lengths.shape != (B,):
        raise ValueError("bad q / k_cache / v_cache / lengths shapes")
    if bool((lengths < 1).any()) or bool((lengths > S).any()):
        raise ValueError(f"lengths must be in 1..{S}")
    outs = []
    for b in range(B):
        n = int(lengths[b])
        k = k_cache[b, :, :n].repeat_interleave(Hq // Hkv, dim=0)
        v = v_cache[b, :, :n].repeat_interleave(Hq // Hkv, dim=0)
        w = torch.softmax(q[b].float() @ k.float().transpose(-1, -2) / math.sqrt(D), dim=-1)
        outs.append((w @ v.float()).to(q.dtype))
    return torch.stack(outs)
