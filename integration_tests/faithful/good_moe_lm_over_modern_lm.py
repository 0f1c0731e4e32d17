"""Faithful M05 written from packages/moe_lm/README.md's Contract alone, over modern_lm.

Its shape is unlike the reference's: the LM *is* a `modern_lm.ModernLM` whose selected
layers get their `mlp` swapped for the mixture after construction (their class switched to
a routed subclass of M02's `DecoderLayer`); the config subclasses `ModernLMConfig` with no
check of its own (the kit's M02 rules only); the top-k comes from `argsort` of the negated
probabilities (stable); the vectorized path gathers every assignment's expert weights
(`weight[experts]`, `[N*k, F, C]`) and runs one batched matmul per projection; the
combine is a `scatter_add` in float32; the output is a NamedTuple of its own.
"""

from __future__ import annotations

VARIABLE = "MOE_LM_MODULE"  # graded through this variable by `nox -s known_bad`

from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from modern_lm import DecoderLayer, ModernLM, ModernLMConfig, SwiGLU


class Mixed(NamedTuple):
    hidden_states: torch.Tensor
    router_logits: torch.Tensor
    expert_counts: torch.Tensor


class SparseMoE(nn.Module):
    def __init__(
        self, hidden_size: int, intermediate_size: int, num_experts: int, experts_per_token: int
    ) -> None:
        super().__init__()
        self.k = experts_per_token
        self.gate = nn.Linear(hidden_size, num_experts, bias=False)
        self.experts = nn.ModuleList(
            SwiGLU(hidden_size, intermediate_size) for _ in range(num_experts)
        )

    def _routing(self, hidden_states: torch.Tensor):
        x = hidden_states.reshape(-1, hidden_states.shape[-1])
        logits = x.float() @ self.gate.weight.float().t()
        if x.dtype == torch.float64:
            logits = x @ self.gate.weight.t()
        probs = logits.softmax(dim=-1)
        top = torch.argsort(-probs, dim=-1, stable=True)[:, : self.k]
        weights = probs.gather(1, top)
        weights = weights / weights.sum(dim=1, keepdim=True)
        counts = F.one_hot(top, len(self.experts)).sum(dim=(0, 1))
        return x, logits, top, weights, counts

    def forward(self, hidden_states: torch.Tensor) -> Mixed:
        x, logits, top, weights, counts = self._routing(hidden_states)
        total = torch.zeros(x.shape, dtype=weights.dtype, device=x.device)
        for e, expert in enumerate(self.experts):
            token, slot = (top == e).nonzero(as_tuple=True)
            if len(token):
                part = expert(x[token]).to(weights.dtype) * weights[token, slot].unsqueeze(-1)
                total = total.scatter_add(0, token[:, None].expand_as(part), part)
        return Mixed(total.to(x.dtype).reshape(hidden_states.shape), logits, counts)

    def forward_vectorized(self, hidden_states: torch.Tensor) -> Mixed:
        x, logits, top, weights, counts = self._routing(hidden_states)
        pick = top.reshape(-1)  # [N*k]
        rows = x.repeat_interleave(self.k, dim=0)[:, :, None]  # [N*k, C, 1]
        gate = torch.stack([e.gate_proj.weight for e in self.experts])[pick]  # [N*k, F, C]
        up = torch.stack([e.up_proj.weight for e in self.experts])[pick]
        down = torch.stack([e.down_proj.weight for e in self.experts])[pick]  # [N*k, C, F]
        inner = F.silu(torch.bmm(gate, rows)) * torch.bmm(up, rows)  # [N*k, F, 1]
        outs = torch.bmm(down, inner)[:, :, 0].reshape(x.shape[0], self.k, -1)
        total = (outs.to(weights.dtype) * weights[:, :, None]).sum(dim=1)
        return Mixed(total.to(x.dtype).reshape(hidden_states.shape), logits, counts)


@dataclass(frozen=True)
class MoELMConfig(ModernLMConfig):
    num_experts: int = 4
    experts_per_token: int = 2
    moe_layers: tuple[int, ...] | None = None


class RoutedLayer(DecoderLayer):
    """M02's block whose mlp returns the mixture's named tuple."""

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.dropout(self.self_attn(self.input_layernorm(x), cos, sin))
        return x + self.dropout(self.mlp(self.post_attention_layernorm(x)).hidden_states)


class MoECausalLM(ModernLM):
    def __init__(self, config: MoELMConfig) -> None:
        super().__init__(config)
        for index, layer in enumerate(self.model.layers):
            if config.moe_layers is not None and index not in config.moe_layers:
                continue
            layer.mlp = SparseMoE(
                config.hidden_size,
                config.intermediate_size,
                config.num_experts,
                config.experts_per_token,
            )
            for parameter in layer.mlp.parameters():
                nn.init.normal_(parameter, std=0.02)
            layer.__class__ = RoutedLayer


__all__ = ["MoECausalLM", "MoELMConfig", "SparseMoE"]
