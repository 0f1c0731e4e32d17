"""Faithful M05 written from packages/moe_lm/README.md's Contract alone, self-contained.

Its shape is unlike the reference's: no import of modern_lm (its own RMSNorm, rotary
tables indexed by position, SDPA with `enable_gqa`, a config of its own with the kit's
checks only), experts of its own class, a reference that loops **token by token**, the
tie rule by repeated `argmax` (which returns the first maximal index) with the winner
masked out, a vectorized path that runs every expert on every token and masks with a
one-hot weight matrix (an einsum over stacked weights), accumulation in the input's
dtype, and a dataclass output.
"""

from __future__ import annotations

VARIABLE = "MOE_LM_MODULE"  # graded through this variable by `nox -s known_bad`

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass
class BlockResult:
    hidden_states: torch.Tensor
    router_logits: torch.Tensor
    expert_counts: torch.Tensor


class Expert(nn.Module):
    def __init__(self, width: int, inner: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(width, inner, bias=False)
        self.up_proj = nn.Linear(width, inner, bias=False)
        self.down_proj = nn.Linear(inner, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def pick(probs: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """k rounds of argmax (first maximal index wins), each winner masked out."""
    remaining = probs.clone()
    chosen, values = [], []
    for _ in range(k):
        best = remaining.argmax(dim=-1)
        chosen.append(best)
        values.append(probs.gather(-1, best[:, None])[:, 0])
        remaining = remaining.scatter(-1, best[:, None], -1.0)
    weights = torch.stack(values, dim=-1)
    return torch.stack(chosen, dim=-1), weights / weights.sum(-1, keepdim=True)


class SparseMoE(nn.Module):
    def __init__(
        self, hidden_size: int, intermediate_size: int, num_experts: int, experts_per_token: int
    ) -> None:
        super().__init__()
        self.top = experts_per_token
        self.gate = nn.Linear(hidden_size, num_experts, bias=False)
        self.experts = nn.ModuleList(
            Expert(hidden_size, intermediate_size) for _ in range(num_experts)
        )

    def _route(self, x: torch.Tensor):
        flat = x.reshape(-1, x.shape[-1])
        wide = torch.promote_types(x.dtype, torch.float32)
        logits = F.linear(flat.to(wide), self.gate.weight.to(wide))
        chosen, weights = pick(logits.softmax(-1), self.top)
        counts = torch.zeros(len(self.experts), dtype=torch.int64, device=x.device)
        counts = counts.index_add(0, chosen.reshape(-1), torch.ones_like(chosen.reshape(-1)))
        return flat, logits, chosen, weights, counts

    def forward(self, hidden_states: torch.Tensor) -> BlockResult:
        flat, logits, chosen, weights, counts = self._route(hidden_states)
        rows = []
        for n in range(flat.shape[0]):
            row = torch.zeros_like(flat[n])
            for j in range(self.top):
                expert = self.experts[int(chosen[n, j])]
                row = row + (expert(flat[n]) * weights[n, j]).to(flat.dtype)
            rows.append(row)
        out = torch.stack(rows) if rows else flat.new_zeros(flat.shape)
        return BlockResult(out.reshape(hidden_states.shape), logits, counts)

    def forward_vectorized(self, hidden_states: torch.Tensor) -> BlockResult:
        flat, logits, chosen, weights, counts = self._route(hidden_states)
        E = len(self.experts)
        dense_weights = torch.zeros(flat.shape[0], E, dtype=weights.dtype, device=flat.device)
        dense_weights = dense_weights.scatter_add(1, chosen, weights)  # one-hot rows [N, E]
        gate = torch.stack([e.gate_proj.weight for e in self.experts])
        up = torch.stack([e.up_proj.weight for e in self.experts])
        down = torch.stack([e.down_proj.weight for e in self.experts])
        hidden = F.silu(torch.einsum("nc,efc->enf", flat, gate)) * torch.einsum(
            "nc,efc->enf", flat, up
        )
        every = torch.einsum("enf,ecf->enc", hidden, down)  # every expert on every token
        out = torch.einsum("enc,ne->nc", every, dense_weights.to(flat.dtype))
        return BlockResult(out.reshape(hidden_states.shape), logits, counts)


@dataclass(frozen=True)
class MoELMConfig:
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    max_position_embeddings: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6
    dropout: float = 0.0
    tie_word_embeddings: bool = False
    num_experts: int = 4
    experts_per_token: int = 2
    moe_layers: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "num_key_value_heads", "head_dim", "intermediate_size",
                     "max_position_embeddings"):  # fmt: skip
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.hidden_size != self.num_attention_heads * self.head_dim:
            raise ValueError("hidden_size must equal num_attention_heads * head_dim")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be divisible by num_key_value_heads")


class Norm(nn.Module):
    def __init__(self, width: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        return self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(
            x.dtype
        )


class Attention(nn.Module):
    def __init__(self, c: MoELMConfig) -> None:
        super().__init__()
        self.h, self.kv, self.d = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        self.q_proj = nn.Linear(c.hidden_size, self.h * self.d, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, self.kv * self.d, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, self.kv * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, c.hidden_size, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape

        def rotate(t: torch.Tensor) -> torch.Tensor:
            a, b = t.chunk(2, dim=-1)
            return t * cos + torch.cat((-b, a), dim=-1) * sin

        q = rotate(self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2))
        k = rotate(self.k_proj(x).view(B, T, self.kv, self.d).transpose(1, 2))
        v = self.v_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, self.h * self.d))


class Dense(nn.Module):
    def __init__(self, c: MoELMConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c: MoELMConfig, index: int) -> None:
        super().__init__()
        self.input_layernorm = Norm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = Norm(c.hidden_size, c.rms_norm_eps)
        sparse = c.moe_layers is None or index in c.moe_layers
        self.mlp: nn.Module = (
            SparseMoE(c.hidden_size, c.intermediate_size, c.num_experts, c.experts_per_token)
            if sparse
            else Dense(c)
        )

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        mixed = self.mlp(self.post_attention_layernorm(x))
        return x + (mixed.hidden_states if isinstance(mixed, BlockResult) else mixed)


class Trunk(nn.Module):
    def __init__(self, c: MoELMConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(Layer(c, i) for i in range(c.num_hidden_layers))
        self.norm = Norm(c.hidden_size, c.rms_norm_eps)
        inv = c.rope_theta ** -(torch.arange(0, c.head_dim, 2).float() / c.head_dim)
        table = torch.arange(c.max_position_embeddings).float()[:, None] * inv
        self.register_buffer("cos_table", table.cos().repeat(1, 2), persistent=False)
        self.register_buffer("sin_table", table.sin().repeat(1, 2), persistent=False)


@dataclass
class LMResult:
    logits: torch.Tensor
    loss: torch.Tensor | None = None


class MoECausalLM(nn.Module):
    def __init__(self, config: MoELMConfig) -> None:
        super().__init__()
        self.config = config
        self.model = Trunk(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, std=0.02)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids, positions=None, labels=None) -> LMResult:
        B, T = input_ids.shape
        if positions is None:
            positions = torch.arange(T, device=input_ids.device).expand(B, T)
        x = self.model.embed_tokens(input_ids)
        cos = self.model.cos_table[positions][:, None].to(x.dtype)
        sin = self.model.sin_table[positions][:, None].to(x.dtype)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        logits = self.lm_head(self.model.norm(x))
        loss = None
        if labels is not None:
            loss = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                labels[:, 1:].reshape(-1),
                ignore_index=-100,
            )
        return LMResult(logits, loss)


__all__ = ["MoECausalLM", "MoELMConfig", "SparseMoE"]
