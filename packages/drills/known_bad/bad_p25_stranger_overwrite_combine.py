"""A stranger combines by assignment (`out[tokens] = ...`) instead of accumulation, so a
token's second expert overwrites its first."""

import torch

VARIABLE = "DRILL_P25_MODULE"
EXPECTED_OWNER = "p25"


def top_k_moe(x, router_logits, experts, k, capacity):
    n, e_count = router_logits.shape
    if x.dim() != 2 or n != x.shape[0]:
        raise ValueError("router_logits must have one row per token of x")
    if len(experts) != e_count:
        raise ValueError("experts must match router_logits columns")
    if not 1 <= k <= e_count:
        raise ValueError("k must lie in 1..E")
    if capacity < 0:
        raise ValueError("capacity must be >= 0")
    probs = router_logits.float().softmax(-1)
    w, idx = probs.topk(k, dim=-1)
    w = w / w.sum(-1, keepdim=True)
    out = torch.zeros_like(x, dtype=torch.float32)
    load = torch.zeros(e_count, dtype=torch.long)
    for e in range(e_count):
        tokens, slots = torch.where(idx == e)
        tokens, slots = tokens[:capacity], slots[:capacity]
        load[e] = tokens.numel()
        if tokens.numel():
            out[tokens] = experts[e](x[tokens]).float() * w[tokens, slots].unsqueeze(-1)
    return out.to(x.dtype), load
