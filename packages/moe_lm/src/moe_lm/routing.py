"""Top-k routing: softmax over every expert, the k most probable, renormalised.

The router computes in float32 or wider (``router_dtype``): in a bfloat16 module two
experts whose logits differ by less than bfloat16's resolution would otherwise tie and
swap, so the choice would depend on the activations' storage precision.

Tie rule: among equal probabilities the **lowest expert index wins**. A stable descending
sort keeps equal values in index order, so the rule needs no tie-breaking noise and the
same input always picks the same experts. (``torch.topk`` on the CPU picks the *higher*
index among equals: a plain topk is not this rule.)
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor


class Routing(NamedTuple):
    """Each token's chosen experts, best first, and their renormalised weights."""

    experts: Tensor  # [N, k] int64, best first; among equal probabilities the lower index
    weights: Tensor  # [N, k] router dtype; each row sums to 1


def router_dtype(dtype: torch.dtype) -> torch.dtype:
    """float32, or float64 for a float64 module: never narrower than float32."""
    return torch.promote_types(dtype, torch.float32)


def route(router_logits: Tensor, experts_per_token: int) -> Routing:
    """Softmax over experts, the ``experts_per_token`` highest (lowest index on ties),
    weights renormalised over the chosen ones."""
    probabilities = router_logits.softmax(dim=-1)
    ranked, order = probabilities.sort(dim=-1, descending=True, stable=True)
    chosen = ranked[:, :experts_per_token]
    weights = chosen / chosen.sum(dim=-1, keepdim=True)
    return Routing(order[:, :experts_per_token], weights)


def expert_counts(experts: Tensor, num_experts: int) -> Tensor:
    """Tokens routed to each expert, ``[E]`` int64 (a token counts once per expert it chose)."""
    return torch.bincount(experts.reshape(-1), minlength=num_experts)


__all__ = ["Routing", "expert_counts", "route", "router_dtype"]
