"""A stranger's P04 from the kit's words alone: index_select with each query head's kv head
(h // group); the one rejection the kit names (Hq not a multiple of Hkv), the rest left
to torch."""

import torch

VARIABLE = "DRILL_P04_MODULE"


def repeat_kv_for_gqa(kv, query_heads):
    kv_heads = kv.shape[1]
    if query_heads % kv_heads:
        raise ValueError(f"query_heads = {query_heads} is not a multiple of Hkv = {kv_heads}")
    group = query_heads // kv_heads
    source = torch.arange(query_heads, device=kv.device) // group
    return kv.index_select(1, source)
