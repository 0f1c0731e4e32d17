"""The decoder layer over flat token rows, with vLLM's packed projections.

``qkv_proj`` is one Linear whose rows are q's, then k's, then v's (vLLM's
``QKVParallelLinear``); ``gate_up_proj`` is one Linear whose rows are the gate's, then
up's (``MergedColumnParallelLinear``). Norms, rotary tables and the K/V repeat are
modern_lm's own. Every module keeps ``prefix``, its dotted path from the model's root
(vLLM names attention layers by it).
"""

from __future__ import annotations

from torch import Tensor, nn
from torch.nn import functional

from modern_lm import RMSNorm, RotaryEmbedding, apply_rotary, repeat_kv

from .config import RuntimeLMConfig
from .context import causal_mask


def join(prefix: str, name: str) -> str:
    """``prefix.name``, or ``name`` at the root."""
    return f"{prefix}.{name}" if prefix else name


class MissingLayer(nn.Module):
    """A layer another pipeline stage holds (vLLM's ``PPMissingLayer``): keeps the
    global layer indices of the checkpoint names, holds no weights, never runs (it has
    no ``forward``)."""


class RuntimeAttention(nn.Module):
    """Causal GQA with RoPE over [N, C] rows, causal within each request of the context."""

    def __init__(self, config: RuntimeLMConfig, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix
        self.n_heads, self.n_kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = D = config.head_dim
        self.sizes = (self.n_heads * D, self.n_kv_heads * D, self.n_kv_heads * D)
        self.qkv_proj = nn.Linear(config.hidden_size, sum(self.sizes), bias=False)
        self.o_proj = nn.Linear(self.n_heads * D, config.hidden_size, bias=False)
        self.rotary_emb = RotaryEmbedding(D, config.rope_theta)

    def _heads(self, x: Tensor, n_heads: int) -> Tensor:
        """[N, n*D] -> [1, n, N, D]."""
        return x.view(x.shape[0], n_heads, self.head_dim).transpose(0, 1)[None]

    def forward(self, positions: Tensor, x: Tensor) -> Tensor:
        N = x.shape[0]
        q, k, v = self.qkv_proj(x).split(self.sizes, dim=-1)
        cos, sin = self.rotary_emb(positions[None], x.dtype)
        q = apply_rotary(self._heads(q, self.n_heads), cos, sin)
        k = apply_rotary(self._heads(k, self.n_kv_heads), cos, sin)
        group = self.n_heads // self.n_kv_heads
        y = functional.scaled_dot_product_attention(
            q,
            repeat_kv(k, group),
            repeat_kv(self._heads(v, self.n_kv_heads), group),
            attn_mask=causal_mask(N, x.device),
        )
        out: Tensor = self.o_proj(y[0].transpose(0, 1).reshape(N, self.n_heads * self.head_dim))
        return out


class RuntimeMLP(nn.Module):
    """SwiGLU with one merged gate/up projection: down(silu(gate) * up)."""

    def __init__(self, config: RuntimeLMConfig, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix
        self.gate_up_proj = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        out: Tensor = self.down_proj(functional.silu(gate) * up)
        return out


class RuntimeDecoderLayer(nn.Module):
    """M02's pre-norm block on rows: h = x + attn(norm(x)); out = h + mlp(norm(h))."""

    def __init__(self, config: RuntimeLMConfig, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = RuntimeAttention(config, join(prefix, "self_attn"))
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = RuntimeMLP(config, join(prefix, "mlp"))

    def forward(self, positions: Tensor, x: Tensor) -> Tensor:
        h = x + self.self_attn(positions, self.input_layernorm(x))
        out: Tensor = h + self.mlp(self.post_attention_layernorm(h))
        return out


__all__ = ["MissingLayer", "RuntimeAttention", "RuntimeDecoderLayer", "RuntimeMLP", "join"]
