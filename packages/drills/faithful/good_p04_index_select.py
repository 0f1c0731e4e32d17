"""A stranger's P04 from the README contract alone: build the kv head index of every query
head (h // group) and gather along the head axis with index_select."""

import torch

VARIABLE = "DRILL_P04_MODULE"


def repeat_kv_for_gqa(kv, query_heads):
    if not isinstance(query_heads, int) or query_heads <= 0:
        raise ValueError(f"query_heads must be a positive int, got {query_heads!r}")
    if not torch.is_tensor(kv) or kv.ndim != 4:
        raise ValueError("kv must be a [B, Hkv, T, D] tensor")
    kv_heads = kv.size(1)
    if query_heads % kv_heads:
        raise ValueError(f"query_heads {query_heads} is not divisible by {kv_heads} kv heads")
    group = query_heads // kv_heads
    index = torch.arange(query_heads, device=kv.device) // group
    return kv.index_select(1, index)
