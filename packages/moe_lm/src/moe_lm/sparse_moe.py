"""SparseMoE: a router and a ModuleList of SwiGLU experts, top-k per token.

    SparseMoE(hidden_size C, intermediate_size F, num_experts E, experts_per_token k)
      gate                      Linear C -> E, bias-free: the router ([E, C])
      experts.e.gate_proj       [F, C]  \
      experts.e.up_proj         [F, C]   modern_lm.SwiGLU, one per expert
      experts.e.down_proj       [C, F]  /

``forward`` is the reference: an explicit loop over experts, each run on the tokens that
chose it (none: skipped). ``forward_vectorized`` computes the same with one batched
dispatch (``dispatch.dispatch_vectorized``). Both flatten ``[..., C]`` to N token rows,
route in float32 or wider, accumulate in the router's dtype and return the input's dtype
in the input's order.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor, nn

from modern_lm import SwiGLU, check_features, check_size

from .dispatch import dispatch_vectorized
from .routing import Routing, expert_counts, route, router_dtype


class MoEOutput(NamedTuple):
    hidden_states: Tensor  # the input's shape [..., C] and dtype
    router_logits: Tensor  # [N, E] (N = tokens, row-major over the leading dims), fp32+
    expert_counts: Tensor  # [E] int64: tokens routed to each expert; sums to N * k


class SparseMoE(nn.Module):
    """Top-``experts_per_token`` mixture of ``num_experts`` SwiGLU experts."""

    def __init__(
        self, hidden_size: int, intermediate_size: int, num_experts: int, experts_per_token: int
    ) -> None:
        super().__init__()
        for name, value in (
            ("hidden_size", hidden_size),
            ("intermediate_size", intermediate_size),
            ("num_experts", num_experts),
            ("experts_per_token", experts_per_token),
        ):
            check_size(name, value)
        if experts_per_token > num_experts:
            raise ValueError(
                f"experts_per_token ({experts_per_token}) must not exceed "
                f"num_experts ({num_experts})"
            )
        self.hidden_size = hidden_size
        self.num_experts = num_experts
        self.experts_per_token = experts_per_token
        self.gate = nn.Linear(hidden_size, num_experts, bias=False)
        self.experts = nn.ModuleList(
            SwiGLU(hidden_size, intermediate_size) for _ in range(num_experts)
        )

    def router(self, tokens: Tensor) -> tuple[Tensor, Routing]:
        """Router logits ``[N, E]`` in float32 or wider, and the routing they give."""
        dtype = router_dtype(tokens.dtype)
        logits = tokens.to(dtype) @ self.gate.weight.to(dtype).T
        return logits, route(logits, self.experts_per_token)

    def forward(self, hidden_states: Tensor) -> MoEOutput:
        """The reference: one explicit pass per expert over the tokens that chose it."""
        tokens = self._tokens(hidden_states)
        logits, routing = self.router(tokens)
        combined = torch.zeros(tokens.shape, dtype=logits.dtype, device=tokens.device)
        for index, expert in enumerate(self.experts):
            rows, choice = torch.where(routing.experts == index)
            if rows.numel() == 0:
                continue  # an expert no token chose does no work
            out = expert(tokens[rows]).to(logits.dtype) * routing.weights[rows, choice, None]
            combined = combined.index_add(0, rows, out)
        return self._output(hidden_states, combined, logits, routing)

    def forward_vectorized(self, hidden_states: Tensor) -> MoEOutput:
        """The same result as ``forward`` through one batched dispatch over stacked weights."""
        tokens = self._tokens(hidden_states)
        logits, routing = self.router(tokens)
        gate, up, down = (
            torch.stack([getattr(expert, name).weight for expert in self.experts])
            for name in ("gate_proj", "up_proj", "down_proj")
        )
        combined = dispatch_vectorized(tokens, routing, gate, up, down)
        return self._output(hidden_states, combined, logits, routing)

    def _tokens(self, hidden_states: Tensor) -> Tensor:
        check_features("hidden_states", hidden_states, self.hidden_size)
        return hidden_states.reshape(-1, self.hidden_size)

    def _output(
        self, hidden_states: Tensor, combined: Tensor, logits: Tensor, routing: Routing
    ) -> MoEOutput:
        out = combined.to(hidden_states.dtype).reshape(hidden_states.shape)
        return MoEOutput(out, logits, expert_counts(routing.experts, self.num_experts))


__all__ = ["MoEOutput", "SparseMoE"]
