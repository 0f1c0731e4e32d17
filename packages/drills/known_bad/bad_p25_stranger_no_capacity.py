"""A stranger's router loops over tokens and never enforces the capacity (it only counts),
so a popular expert takes every token that chose it."""

import torch

VARIABLE = "DRILL_P25_MODULE"
EXPECTED_OWNER = "p25"


def top_k_moe(x, router_logits, experts, k, capacity):
    N, E = router_logits.shape
    if x.shape[0] != N or len(experts) != E:
        raise ValueError("x, router_logits and experts disagree")
    if k < 1 or k > E or capacity < 0:
        raise ValueError("k must be in 1..E and capacity >= 0")
    probs = torch.softmax(router_logits.float(), dim=-1)
    top_p, top_e = torch.topk(probs, k, dim=-1)
    top_p = top_p / top_p.sum(dim=-1, keepdim=True)
    groups = {e: [] for e in range(E)}
    for n in range(N):
        for j in range(k):
            groups[int(top_e[n, j])].append((n, float(top_p[n, j])))
    out = torch.zeros(N, x.shape[1])
    load = torch.zeros(E, dtype=torch.int64)
    for e, members in groups.items():
        load[e] = min(len(members), capacity)
        if not members:
            continue
        rows = torch.tensor([n for n, _ in members])
        y = experts[e](x[rows]).float()
        for i, (n, w) in enumerate(members):
            out[n] += w * y[i]
    return out.to(x.dtype), load
