"""A stranger's PT40 from the kit's words alone (the kit names no rejection, so none): a
Python walk over experts in id order and, inside, over tokens and slots, with a running
count per expert for the capacity; weights normalized in float64 and cast back; the
counts and offsets built from Python lists."""

import torch

VARIABLE = "DRILL_PT40_MODULE"


def build_expert_dispatch(top_experts, top_weights, experts_per_rank, world_size=None,
                          capacity=None):  # fmt: skip
    T, K = top_experts.shape
    ids = top_experts.tolist()
    if world_size is None:
        highest = max((e for row in ids for e in row), default=0)
        world_size = highest // experts_per_rank + 1
    n_experts = world_size * experts_per_rank
    shares = (top_weights.double() / top_weights.double().sum(dim=1, keepdim=True)).tolist()
    order, weights, expert_counts = [], [], []
    for expert in range(n_experts):
        count = 0
        for t in range(T):
            for k in range(K):
                if ids[t][k] == expert and (capacity is None or count < capacity):
                    order.append(t * K + k)
                    weights.append(shares[t][k])
                    count += 1
        expert_counts.append(count)
    send = [sum(expert_counts[r * experts_per_rank : (r + 1) * experts_per_rank])
            for r in range(world_size)]  # fmt: skip
    offsets = [sum(send[:r]) for r in range(world_size)]
    inverse = torch.full((T, K), -1, dtype=torch.int64)
    for position, route in enumerate(order):
        inverse[route // K, route % K] = position
    order_t = torch.tensor(order, dtype=torch.int64)
    return {
        "order": order_t,
        "token_ids": order_t // K,
        "weights": torch.tensor(weights, dtype=torch.float64).to(top_weights.dtype),
        "expert_counts": torch.tensor(expert_counts, dtype=torch.int64),
        "send_counts": torch.tensor(send, dtype=torch.int64),
        "send_offsets": torch.tensor(offsets, dtype=torch.int64),
        "inverse": inverse,
    }
