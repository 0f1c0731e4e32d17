"""A stranger's P25 from the kit's words alone: routing in fp32, the capacity applied with a
running per-expert count in token order (first choices and later ones alike), each expert
run once on its packed kept rows, the results added back with index_add_; no validation
(the kit names none)."""

import torch

VARIABLE = "DRILL_P25_MODULE"


def top_k_moe(x, router_logits, experts, k, capacity):
    tokens, count = router_logits.shape
    probs = router_logits.float().softmax(dim=-1)
    weights, chosen = probs.topk(k, dim=-1)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    taken = [0] * count
    kept = [[] for _ in range(count)]
    for n in range(tokens):
        for j in range(k):
            e = int(chosen[n, j])
            if taken[e] < capacity:
                taken[e] += 1
                kept[e].append((n, j))
    out = torch.zeros(tokens, x.shape[1], dtype=torch.float32, device=x.device)
    for e, pairs in enumerate(kept):
        if not pairs:
            continue
        rows = torch.tensor([n for n, _ in pairs], device=x.device)
        cols = torch.tensor([j for _, j in pairs], device=x.device)
        result = experts[e](x[rows]).float() * weights[rows, cols][:, None]
        out.index_add_(0, rows, result)
    return out.to(x.dtype), torch.tensor(taken, dtype=torch.int64, device=x.device)
