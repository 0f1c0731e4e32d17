"""A stranger's P19 from the kit's words alone: queries grouped per kv head, scores over the
whole capacity in fp32, slots at or past a row's length set to -inf (and their values to 0,
so nothing there reaches the output); no validation (the kit names none)."""

import math

import torch

VARIABLE = "DRILL_P19_MODULE"


def decode_attention(q, k_cache, v_cache, lengths):
    batch, query_heads, _, dim = q.shape
    kv_heads, capacity = k_cache.shape[1], k_cache.shape[2]
    grouped = q.float().reshape(batch, kv_heads, query_heads // kv_heads, dim)
    valid = torch.arange(capacity, device=q.device) < lengths[:, None].to(q.device)
    valid = valid[:, None, None, :]
    keys = k_cache.float().masked_fill(~valid.transpose(-1, -2), 0.0)
    values = v_cache.float().masked_fill(~valid.transpose(-1, -2), 0.0)
    scores = grouped @ keys.transpose(-1, -2) / math.sqrt(dim)
    weights = scores.masked_fill(~valid, float("-inf")).softmax(dim=-1)
    return (weights @ values).reshape(batch, query_heads, 1, dim).to(q.dtype)
