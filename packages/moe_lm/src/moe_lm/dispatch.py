"""Vectorized dispatch: every expert's SwiGLU in three batched matmuls, no Python loop.

The (token, choice) assignments are sorted by expert (stably, so each expert's rows stay
in token order), packed into a zero-padded ``[E, M, C]`` batch (M: the busiest expert's
count), run through the experts' stacked weights with ``bmm``, and added back to their
tokens' rows weighted by the router. Padding rows compute ``SwiGLU(0) = 0`` and are never
read back.

    assignments [N*k]  ->  sorted by expert  ->  packed [E, M, C]
    gate/up [E, F, C], down [E, C, F]  ->  [E, M, C]  ->  index_add into [N, C]
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional

from .routing import Routing


def dispatch_vectorized(
    tokens: Tensor,
    routing: Routing,
    gate: Tensor,
    up: Tensor,
    down: Tensor,
) -> Tensor:
    """``[N, C]`` tokens through their chosen experts, combined in token order.

    ``gate`` and ``up`` are the stacked expert weights ``[E, F, C]``, ``down`` ``[E, C, F]``
    (``nn.Linear`` layout). Returns the router-dtype sum ``[N, C]``.
    """
    N, C = tokens.shape
    E, k = gate.shape[0], routing.experts.shape[1]
    flat_experts = routing.experts.reshape(-1)  # [N*k], token-major
    flat_tokens = torch.arange(N, device=tokens.device).repeat_interleave(k)
    order = torch.argsort(flat_experts, stable=True)
    sorted_experts = flat_experts[order]
    counts = torch.bincount(flat_experts, minlength=E)
    starts = torch.cumsum(counts, dim=0) - counts
    slots = torch.arange(N * k, device=tokens.device) - starts[sorted_experts]
    width = int(counts.max()) if N * k else 0
    packed = tokens.new_zeros(E, width, C)
    packed[sorted_experts, slots] = tokens[flat_tokens[order]]
    hidden = functional.silu(packed @ gate.transpose(1, 2)) * (packed @ up.transpose(1, 2))
    results = (hidden @ down.transpose(1, 2))[sorted_experts, slots]  # [N*k, C], sorted
    weights = routing.weights.reshape(-1)[order, None]
    combined = torch.zeros(N, C, dtype=weights.dtype, device=tokens.device)
    return combined.index_add(0, flat_tokens[order], results.to(weights.dtype) * weights)


__all__ = ["dispatch_vectorized"]
