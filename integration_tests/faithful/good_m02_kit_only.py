"""Kit-only faithful M02: the kit's Llama-style build and only the config checks it names.

Written from packages/modern_lm/README.md's Contract (its graded clauses) alone, in a shape
unlike the reference's: one `Decoder` holding plain `nn.Linear`s under Llama's paths, a
RoPE written as a complex multiply on (first half, second half) pairs, the grouped K/V
expanded with `repeat_interleave`, SDPA with `is_causal`, and RMSNorm in float32. The
config checks exactly what the kit lists (sizes positive, `hidden_size = heads x
head_dim`, query heads divisible by kv heads): a bool or float size, an odd head_dim, a
dropout or rope base or epsilon out of range are not refused (extension clauses).
"""

from __future__ import annotations

VARIABLE = "MODERN_LM_MODULE"  # graded through this variable by `nox -s known_bad`

from dataclasses import dataclass
from types import SimpleNamespace

import torch
from torch import nn
from torch.nn import functional as F

SIZES = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "max_position_embeddings",
)


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

    def __post_init__(self) -> None:
        for name in SIZES:
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.hidden_size != self.num_attention_heads * self.head_dim:
            raise ValueError("hidden_size must equal num_attention_heads * head_dim")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be divisible by num_key_value_heads")


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, x):
        wide = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        normed = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)


def rotate(x, positions, theta):
    """Split-half RoPE as a complex multiply: pair (i, i + D/2) turns by pos * theta^(-2i/D)."""
    half = x.shape[-1] // 2
    exponents = torch.arange(half, device=x.device, dtype=torch.float32) * 2 / x.shape[-1]
    angles = positions[:, None, :, None].float() * theta ** (-exponents)  # [B, 1, T, D/2]
    turn = torch.polar(torch.ones_like(angles), angles).to(
        torch.complex128 if x.dtype == torch.float64 else torch.complex64
    )
    pairs = torch.complex(x[..., :half].to(turn.real.dtype), x[..., half:].to(turn.real.dtype))
    turned = pairs * turn
    return torch.cat((turned.real, turned.imag), dim=-1).to(x.dtype)


class Attention(nn.Module):
    def __init__(self, c: ModernLMConfig) -> None:
        super().__init__()
        self.c = c
        H, K, D = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        self.q_proj = nn.Linear(c.hidden_size, H * D, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, K * D, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, K * D, bias=False)
        self.o_proj = nn.Linear(H * D, c.hidden_size, bias=False)

    def forward(self, x, positions):
        B, T, _ = x.shape
        c = self.c
        H, K, D = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, K, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, K, D).transpose(1, 2)
        q, k = rotate(q, positions, c.rope_theta), rotate(k, positions, c.rope_theta)
        k = k.repeat_interleave(H // K, dim=1)
        v = v.repeat_interleave(H // K, dim=1)
        p = c.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, H * D))


class Mlp(nn.Module):
    def __init__(self, c: ModernLMConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c: ModernLMConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = Mlp(c)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x, positions):
        h = x + self.drop(self.self_attn(self.input_layernorm(x), positions))
        return h + self.drop(self.mlp(self.post_attention_layernorm(h)))


class Decoder(nn.Module):
    def __init__(self, c: ModernLMConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(Layer(c) for _ in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)


class ModernLM(nn.Module):
    def __init__(self, config: ModernLMConfig) -> None:
        super().__init__()
        self.config = config
        self.model = Decoder(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids, positions=None, labels=None):
        B, T = input_ids.shape
        if positions is None:
            positions = torch.arange(T, device=input_ids.device).expand(B, T)
        x = self.model.embed_tokens(input_ids)
        for layer in self.model.layers:
            x = layer(x, positions)
        logits = self.lm_head(self.model.norm(x))
        loss = None
        if labels is not None:
            shifted = logits[:, :-1].reshape(-1, logits.shape[-1])
            targets = labels[:, 1:].reshape(-1)
            scored = targets != -100
            losses = F.cross_entropy(shifted, targets.masked_fill(~scored, 0), reduction="none")
            loss = (losses * scored).sum() / scored.sum().clamp(min=1)
        return SimpleNamespace(logits=logits, loss=loss)
