"""Faithful M10 written from packages/fragment_lm/README.md's Contract alone, in plain torch.

Its shape is unlike the reference's: keys are cached *before* rotation and rotated at
attention time from their absolute positions (`start + slot`); the returned storage is
four slots longer than the longest row needs; attention loops over the batch rows with a
per-row mask; the mixture is a per-token loop of its own (no `moe_lm`); the telemetry is
two stacked tensors, `[L, B*T, E]` and `[L, E]`; the output is a NamedTuple; the config
has the kit's checks only; the head is tied by sharing the embedding's Parameter.
"""

from __future__ import annotations

VARIABLE = "FRAGMENT_LM_MODULE"  # graded through this variable by `nox -s known_bad`

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

SPARE_SLOTS = 4


@dataclass(frozen=True)
class FragmentConfig:
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
    tie_word_embeddings: bool = True
    num_experts: int = 4
    experts_per_token: int = 2

    def __post_init__(self):
        sizes = (
            self.vocab_size, self.hidden_size, self.num_hidden_layers, self.num_attention_heads,
            self.num_key_value_heads, self.head_dim, self.intermediate_size,
            self.max_position_embeddings, self.num_experts, self.experts_per_token,
        )  # fmt: skip
        if any(s <= 0 for s in sizes):
            raise ValueError("every size must be positive")
        if self.hidden_size != self.num_attention_heads * self.head_dim:
            raise ValueError("hidden_size must be num_attention_heads * head_dim")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_key_value_heads must divide num_attention_heads")
        if self.experts_per_token > self.num_experts:
            raise ValueError("experts_per_token must not exceed num_experts")


class Output(NamedTuple):
    logits: torch.Tensor
    past_key_values: tuple | None = None
    cache_lengths: torch.Tensor | None = None
    cache_start_positions: torch.Tensor | None = None
    router_logits: torch.Tensor | None = None
    expert_counts: torch.Tensor | None = None


class Norm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        return (self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps))).to(
            x.dtype
        )


def rotate(x, positions, theta):
    """x [..., T, D] at positions [..., T] (split-half pairs)."""
    D = x.shape[-1]
    inv = theta ** -(torch.arange(0, D, 2, dtype=torch.float32, device=x.device) / D)
    angles = positions.float()[..., None] * inv
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    a, b = x[..., : D // 2], x[..., D // 2 :]
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.H, self.K, self.D, self.theta = (
            c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.rope_theta,
        )  # fmt: skip
        self.q_proj = nn.Linear(c.hidden_size, self.H * self.D, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, self.K * self.D, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, self.K * self.D, bias=False)
        self.o_proj = nn.Linear(self.H * self.D, c.hidden_size, bias=False)

    def forward(self, x, positions, past, lengths, starts, storage):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.K, self.D).transpose(1, 2)  # unrotated
        v = self.v_proj(x).view(B, T, self.K, self.D).transpose(1, 2)
        keys = x.new_zeros(B, self.K, storage, self.D)
        values = x.new_zeros(B, self.K, storage, self.D)
        outs = []
        for b in range(B):
            n = int(lengths[b])
            if past is not None:
                keys[b, :, :n] = past[0][b, :, :n]
                values[b, :, :n] = past[1][b, :, :n]
            keys[b, :, n : n + T] = k[b]
            values[b, :, n : n + T] = v[b]
            L = n + T
            key_positions = int(starts[b]) + torch.arange(L, device=x.device)
            qb = rotate(q[b], positions[b], self.theta)  # [H, T, D]
            kb = rotate(keys[b, :, :L], key_positions, self.theta)  # [K, L, D]
            group = self.H // self.K
            kb, vb = kb.repeat_interleave(group, 0), values[b, :, :L].repeat_interleave(group, 0)
            scores = qb @ kb.transpose(-1, -2) / math.sqrt(self.D)
            allowed = key_positions[None, :] <= positions[b][:, None]
            scores = scores.masked_fill(~allowed, float("-inf"))
            outs.append(scores.softmax(-1) @ vb)
        y = torch.stack(outs).transpose(1, 2).reshape(B, T, self.H * self.D)
        return self.o_proj(y), (keys, values)


class Expert(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Mixture(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.k = c.experts_per_token
        self.gate = nn.Linear(c.hidden_size, c.num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(c) for _ in range(c.num_experts))

    def forward(self, x):
        rows = x.reshape(-1, x.shape[-1])
        logits = rows.float() @ self.gate.weight.float().T
        counts = torch.zeros(len(self.experts), dtype=torch.long, device=x.device)
        out = []
        for n in range(rows.shape[0]):  # one token at a time
            p = logits[n].softmax(-1)
            ranked = torch.sort(p, descending=True, stable=True)
            chosen, weights = ranked.indices[: self.k], ranked.values[: self.k]
            weights = weights / weights.sum()
            total = torch.zeros_like(rows[n], dtype=torch.float32)
            for e, w in zip(chosen.tolist(), weights, strict=True):
                total = total + w * self.experts[e](rows[n]).float()
                counts[e] += 1
            out.append(total.to(x.dtype))
        return torch.stack(out).reshape(x.shape), logits, counts


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = Norm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = Norm(c.hidden_size, c.rms_norm_eps)
        self.mlp = Mixture(c)


class Trunk(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(Layer(c) for _ in range(c.num_hidden_layers))
        self.norm = Norm(c.hidden_size, c.rms_norm_eps)


class PaperFragmentLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = Trunk(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def _check(self, input_ids, positions, past, lengths, starts):
        c = self.config
        if input_ids.dim() != 2 or positions.shape != input_ids.shape:
            raise ValueError("input_ids and positions must be [B, T] alike")
        if bool((positions < 0).any()) or bool((positions >= c.max_position_embeddings).any()):
            raise ValueError("positions must lie in [0, max_position_embeddings)")
        if bool((positions[:, 1:] - positions[:, :-1] != 1).any()):
            raise ValueError("positions must be contiguous in a row")
        if past is None:
            if lengths is not None or starts is not None:
                raise ValueError("cache metadata without past_key_values")
            return
        if lengths is None or starts is None:
            raise ValueError("past_key_values needs cache_lengths and cache_start_positions")
        if len(past) != c.num_hidden_layers:
            raise ValueError("one (key, value) pair per layer")
        B = input_ids.shape[0]
        for key, value in past:
            want = (B, c.num_key_value_heads, key.shape[2], c.head_dim)
            if tuple(key.shape) != want or tuple(value.shape) != want:
                raise ValueError("cache pairs must be [B, H_kv, S, D]")
        if bool((lengths < 0).any()) or bool((lengths > past[0][0].shape[2]).any()):
            raise ValueError("cache_lengths beyond the cache storage")
        if bool((positions[:, 0] != starts + lengths).any()):
            raise ValueError("positions must continue each row's cache")

    def forward(
        self,
        input_ids,
        positions,
        past_key_values=None,
        cache_lengths=None,
        cache_start_positions=None,
        use_cache=False,
        return_router_state=False,
    ):
        self._check(input_ids, positions, past_key_values, cache_lengths, cache_start_positions)
        B, T = input_ids.shape
        if past_key_values is None:
            lengths = torch.zeros(B, dtype=torch.long, device=input_ids.device)
            starts = positions[:, 0].clone()
        else:
            lengths, starts = cache_lengths, cache_start_positions
        storage = int((lengths + T).max()) + SPARE_SLOTS
        x = self.model.embed_tokens(input_ids)
        present, routers, counts = [], [], []
        for i, layer in enumerate(self.model.layers):
            past = None if past_key_values is None else past_key_values[i]
            attended, kv = layer.self_attn(
                layer.input_layernorm(x), positions, past, lengths, starts, storage
            )
            x = x + attended
            mixed, router, count = layer.mlp(layer.post_attention_layernorm(x))
            x = x + mixed
            present.append(kv)
            routers.append(router)
            counts.append(count)
        logits = self.lm_head(self.model.norm(x))
        out = {"logits": logits}
        if use_cache:
            out.update(
                past_key_values=tuple(present),
                cache_lengths=lengths + T,
                cache_start_positions=starts.clone(),
            )
        if return_router_state:
            out.update(router_logits=torch.stack(routers), expert_counts=torch.stack(counts))
        return Output(**out)
