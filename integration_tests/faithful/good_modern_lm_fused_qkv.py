"""Throwaway faithful M02 (written from packages/modern_lm/README.md's Contract alone).

Different internals on purpose: one fused `qkv_proj` per layer (q, k and v rows stacked),
presented to and accepted from checkpoints as Llama's q/k/v keys through state-dict hooks;
RoPE as a complex multiplication of (x[:D/2] + i x[D/2:]); K/V groups expanded by
`expand` + `reshape`; a manual softmax with a triu mask; RMSNorm through
`torch.linalg.vector_norm` in float64; own messages; a plain class for the output.
"""

from __future__ import annotations

VARIABLE = "MODERN_LM_MODULE"  # graded through this variable by `nox -s known_bad`

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class ModernLMConfig:
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

    def __post_init__(self):
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "intermediate_size",
            "max_position_embeddings",
        ):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"bad {name}: {value!r}")
        if self.num_attention_heads * self.head_dim != self.hidden_size:
            raise ValueError(f"hidden_size {self.hidden_size} is not heads * head_dim")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must split into num_key_value_heads groups")
        if self.head_dim % 2:
            raise ValueError(f"head_dim {self.head_dim} must be even")
        for name in ("rope_theta", "rms_norm_eps"):
            value = getattr(self, name)
            if not (
                isinstance(value, (int, float)) and not isinstance(value, bool)
            ) or not 0 < value < float("inf"):
                raise ValueError(f"bad {name}: {value!r}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"bad dropout {self.dropout}")


class Output:
    def __init__(self, logits, loss):
        self.logits, self.loss = logits, loss


class Norm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, x):
        wide = x.double()
        rms = torch.linalg.vector_norm(wide, dim=-1, keepdim=True) / math.sqrt(x.shape[-1])
        rms = torch.sqrt(rms * rms + self.eps)
        return self.weight * (wide / rms).to(x.dtype)


def rotate(x, angles):
    """x [B, H, T, D] times e^(i angle) on pairs (x[j], x[j + D/2]); angles [B, 1, T, D/2]."""
    half = x.shape[-1] // 2
    as_complex = torch.complex(x[..., :half].double(), x[..., half:].double())
    turned = as_complex * torch.polar(torch.ones_like(angles), angles)
    return torch.cat((turned.real, turned.imag), dim=-1).to(x.dtype)


class Attention(nn.Module):
    def __init__(self, c: ModernLMConfig):
        super().__init__()
        self.h, self.kv, self.d = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        self.qkv_proj = nn.Linear(c.hidden_size, (self.h + 2 * self.kv) * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, c.hidden_size, bias=False)
        self.p = c.dropout
        self._register_state_dict_hook(Attention._split)
        self.register_load_state_dict_pre_hook(Attention._fuse)

    @staticmethod
    def _split(module, state, prefix, _meta):
        fused = state.pop(prefix + "qkv_proj.weight")
        sizes = [module.h * module.d, module.kv * module.d, module.kv * module.d]
        for name, part in zip(("q", "k", "v"), fused.split(sizes), strict=True):
            state[f"{prefix}{name}_proj.weight"] = part
        return state

    @staticmethod
    def _fuse(module, state, prefix, *_):
        names = [f"{prefix}{n}_proj.weight" for n in ("q", "k", "v")]
        if all(n in state for n in names):
            state[prefix + "qkv_proj.weight"] = torch.cat([state.pop(n) for n in names])

    def forward(self, x, angles):
        B, T, _ = x.shape
        q, k, v = self.qkv_proj(x).split(
            [self.h * self.d, self.kv * self.d, self.kv * self.d], dim=-1
        )
        q = rotate(q.view(B, T, self.h, self.d).transpose(1, 2), angles)
        k = rotate(k.view(B, T, self.kv, self.d).transpose(1, 2), angles)
        v = v.view(B, T, self.kv, self.d).transpose(1, 2)
        g = self.h // self.kv
        k = k[:, :, None].expand(B, self.kv, g, T, self.d).reshape(B, self.h, T, self.d)
        v = v[:, :, None].expand(B, self.kv, g, T, self.d).reshape(B, self.h, T, self.d)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        blocked = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        weights = scores.masked_fill(blocked, float("-inf")).softmax(-1)
        weights = F.dropout(weights, self.p, self.training)
        return self.o_proj((weights @ v).transpose(1, 2).reshape(B, T, self.h * self.d))


class MLP(nn.Module):
    def __init__(self, c: ModernLMConfig):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        gate = self.gate_proj(x)
        return self.down_proj(gate * torch.sigmoid(gate) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c: ModernLMConfig):
        super().__init__()
        self.input_layernorm = Norm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = Norm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MLP(c)

    def forward(self, x, angles):
        x = x + self.self_attn(self.input_layernorm(x), angles)
        return x + self.mlp(self.post_attention_layernorm(x))


class Trunk(nn.Module):
    def __init__(self, c: ModernLMConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([Layer(c) for _ in range(c.num_hidden_layers)])
        self.norm = Norm(c.hidden_size, c.rms_norm_eps)


class ModernLM(nn.Module):
    def __init__(self, config: ModernLMConfig):
        super().__init__()
        self.config = config
        self.model = Trunk(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        half = config.head_dim // 2
        exponent = torch.arange(half, dtype=torch.float64) * 2 / config.head_dim
        self.register_buffer("frequencies", config.rope_theta**-exponent, persistent=False)
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                continue
            nn.init.trunc_normal_(p, std=0.02)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids, positions=None, labels=None):
        B, T = input_ids.shape
        if positions is None:
            positions = torch.arange(T, device=input_ids.device).repeat(B, 1)
        angles = positions[:, None, :, None].double() * self.frequencies.double()
        x = self.model.embed_tokens(input_ids)
        for layer in self.model.layers:
            x = layer(x, angles)
        logits = self.lm_head(self.model.norm(x))
        loss = None
        if labels is not None:
            flat = F.log_softmax(logits[:, :-1].float(), -1).flatten(0, 1)
            target = labels[:, 1:].flatten()
            keep = target != -100
            picked = flat[keep].gather(1, target[keep, None]).squeeze(1)
            loss = -picked.sum() / keep.sum().clamp(min=1)
        return Output(logits, loss)
