"""PT40 expert dispatch permutation (transfer case; owner P25).

Each token t sends its K routes (top_experts[t, k], weight top_weights[t, k]) to the rank
that holds the expert: expert e lives on rank e // experts_per_rank as local expert
e % experts_per_rank. The dispatch lists every kept route once, grouped by (rank, local
expert), i.e. by expert id, and in (token, slot) order inside a group (a stable sort), so
rank r's block starts at send_offsets[r] and holds send_counts[r] routes.

Capacity (the explicit drop policy): with `capacity` c, each expert keeps its first c
routes in (token, slot) order and drops the rest; a dropped route is not sent, counted or
combined, and the kept weights are not renormalized. Weights are each token's K weights
divided by their sum, before any drop.

    order [M]        flat route ids t*K + k, in dispatch order (M routes kept)
    token_ids [M]    order // K: the token each dispatched row carries
    weights [M]      normalized weight of each dispatched route
    expert_counts [E], send_counts [R], send_offsets [R]   (E = R * experts_per_rank)
    inverse [T, K]   position of route (t, k) in the dispatch, -1 where dropped

Combine: out[t] = sum over kept k of weights[inverse[t, k]] * y[inverse[t, k]].
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def build_expert_dispatch(
    top_experts: Tensor,
    top_weights: Tensor,
    experts_per_rank: int,
    world_size: int | None = None,
    capacity: int | None = None,
) -> dict[str, Tensor]:
    """The dispatch permutation, counts, offsets, weights and inverse map (see above)."""
    ranks = _check(top_experts, top_weights, experts_per_rank, world_size, capacity)
    T, K = top_experts.shape
    experts = top_experts.reshape(-1).long()  # route t*K + k
    order = experts.argsort(stable=True)  # by expert id = by (rank, local expert)
    ranked = experts[order]
    if capacity is not None:
        first = torch.searchsorted(ranked, ranked)  # where each route's expert group starts
        order = order[torch.arange(order.numel(), device=order.device) - first < capacity]
    expert_counts = torch.bincount(experts[order], minlength=ranks * experts_per_rank)
    send_counts = expert_counts.view(ranks, experts_per_rank).sum(dim=1)
    inverse = torch.full((T * K,), -1, dtype=torch.long, device=order.device)
    inverse[order] = torch.arange(order.numel(), device=order.device)
    normalized = top_weights / top_weights.sum(dim=-1, keepdim=True)
    return {
        "order": order,
        "token_ids": order // K,
        "weights": normalized.reshape(-1)[order],
        "expert_counts": expert_counts,
        "send_counts": send_counts,
        "send_offsets": send_counts.cumsum(0) - send_counts,
        "inverse": inverse.view(T, K),
    }


def _check(
    top_experts: Tensor,
    top_weights: Tensor,
    experts_per_rank: int,
    world_size: int | None,
    capacity: int | None,
) -> int:
    """Kinds, shapes and ranges; returns the rank count (given, or the fewest that hold
    every routed expert)."""
    if not isinstance(top_experts, Tensor) or top_experts.dim() != 2:
        raise ValueError(f"top_experts must be a tensor [T, K], got {described(top_experts)}")
    if top_experts.is_floating_point() or top_experts.dtype == torch.bool:
        raise ValueError(f"top_experts must hold integer ids, got {top_experts.dtype}")
    if not isinstance(top_weights, Tensor) or top_weights.shape != top_experts.shape:
        raise ValueError(f"top_weights must match top_experts, got {described(top_weights)}")
    for name, value in (("experts_per_rank", experts_per_rank), ("world_size", world_size)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if capacity is not None and (
        isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0
    ):
        raise ValueError(f"capacity must be None or an int >= 0, got {capacity!r}")
    highest = int(top_experts.max()) if top_experts.numel() else -1
    ranks = world_size if world_size is not None else max(1, -(-(highest + 1) // experts_per_rank))
    if top_experts.numel() and (int(top_experts.min()) < 0 or highest >= ranks * experts_per_rank):
        raise ValueError(f"top_experts holds ids outside [0, {ranks * experts_per_rank})")
    return ranks


__all__ = ["build_expert_dispatch"]
