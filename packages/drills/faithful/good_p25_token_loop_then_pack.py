"""A stranger's P25 from the README contract alone: assigns slots in a token loop, packs
each expert's kept tokens with one index tensor, combines with index_add_."""

import torch

VARIABLE = "DRILL_P25_MODULE"


def top_k_moe(x, router_logits, experts, k, capacity):
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(experts):
        raise ValueError(f"k must be an int in 1..{len(experts)}")
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
        raise ValueError("capacity must be a non-negative int")
    if x.ndim != 2 or router_logits.ndim != 2 or router_logits.shape[0] != x.shape[0]:
        raise ValueError("router_logits must be [N, E] for x [N, C]")
    if router_logits.shape[1] != len(experts):
        raise ValueError("experts: need one per router_logits column")
    probs = router_logits.to(torch.float32).softmax(dim=1)
    chosen_p, chosen_e = probs.topk(k, dim=1)
    gate = chosen_p / chosen_p.sum(dim=1, keepdim=True)
    kept = [[] for _ in experts]
    for token, row in enumerate(chosen_e.tolist()):
        for j, e in enumerate(row):
            if len(kept[e]) < capacity:
                kept[e].append((token, j))
    out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for e, pairs in enumerate(kept):
        if not pairs:
            continue
        tokens = torch.tensor([t for t, _ in pairs], device=x.device)
        picks = torch.tensor([j for _, j in pairs], device=x.device)
        result = experts[e](x.index_select(0, tokens)).to(torch.float32)
        out.index_add_(0, tokens, result * gate[tokens, picks].unsqueeze(1))
    load = torch.tensor([len(p) for p in kept], dtype=torch.int64, device=x.device)
    return out.to(x.dtype), load
