"""ModernLM: a Llama-shaped causal decoder whose module paths are Llama's checkpoint names.

ModernLM
  model.embed_tokens                     Embedding [V, C]
  model.rotary_emb                       RoPE angles (non-persistent inv_freq buffer)
  model.layers.N.input_layernorm         RMSNorm [C]
  model.layers.N.self_attn.{q,k,v,o}_proj   bias-free; q [H*D, C], k and v [H_kv*D, C]
  model.layers.N.post_attention_layernorm   RMSNorm [C]
  model.layers.N.mlp.{gate,up,down}_proj    SwiGLU, bias-free
  model.norm                             final RMSNorm [C]
  lm_head                                [V, C], optionally the embedding's Parameter
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.modules.module import _IncompatibleKeys

from .attention import GroupedQueryAttention
from .checkpoint import atomic_load
from .checks import ArgumentTypeError
from .config import ModernLMConfig
from .loss import check_labels, shifted_cross_entropy
from .mlp import SwiGLU
from .norm import RMSNorm
from .rotary import RotaryEmbedding

INITIALIZER_RANGE = 0.02  # std of every projection and the embedding (Llama's default)


@dataclass(frozen=True)
class ModernLMOutput:
    logits: Tensor  # [B, T, V]
    loss: Tensor | None = None


class DecoderLayer(nn.Module):
    """Pre-norm residual block: x + attn(norm(x)), then h + mlp(norm(h))."""

    def __init__(self, config: ModernLMConfig) -> None:
        super().__init__()
        config = ModernLMConfig.checked(config)
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = GroupedQueryAttention(config)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = SwiGLU(config.hidden_size, config.intermediate_size)
        self.dropout = nn.Dropout(config.dropout)  # on each residual branch, training only

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        x = x + self.dropout(self.self_attn(self.input_layernorm(x), cos, sin))
        out: Tensor = x + self.dropout(self.mlp(self.post_attention_layernorm(x)))
        return out


class ModernModel(nn.Module):
    """Embedding, layers and final norm: token ids and positions -> final hidden states."""

    def __init__(self, config: ModernLMConfig) -> None:
        super().__init__()
        self.config = config = ModernLMConfig.checked(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.rotary_emb = RotaryEmbedding(config.head_dim, config.rope_theta)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, input_ids: Tensor, positions: Tensor | None = None) -> Tensor:
        positions = checked_positions(self.config, input_ids, positions)
        x = self.dropout(self.embed_tokens(input_ids))
        cos, sin = self.rotary_emb(positions, x.dtype)  # once per forward, shared by layers
        for layer in self.layers:
            x = layer(x, cos, sin)
        out: Tensor = self.norm(x)
        return out


class ModernLM(nn.Module):
    """``forward(input_ids, positions=None, labels=None) -> ModernLMOutput``."""

    def __init__(self, config: ModernLMConfig) -> None:
        super().__init__()
        self.config = config = ModernLMConfig.checked(config)
        self.model = ModernModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.apply(_init_weights)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight  # one Parameter

    def forward(
        self, input_ids: Tensor, positions: Tensor | None = None, labels: Tensor | None = None
    ) -> ModernLMOutput:
        positions = checked_positions(self.config, input_ids, positions)
        if labels is not None:  # checked before any work, not after the whole forward
            check_labels(labels, (positions.shape[0], positions.shape[1]), self.config.vocab_size)
        logits: Tensor = self.lm_head(self.model(input_ids, positions))
        loss = None if labels is None else shifted_cross_entropy(logits, labels)
        return ModernLMOutput(logits, loss)

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Atomic (``checkpoint.atomic_load``): a checkpoint that does not fit, or whose
        tied embedding and head differ, is refused before any copy; the tie survives."""
        result = atomic_load(self, state_dict, strict=strict, assign=assign)
        if self.config.tie_word_embeddings:  # assign=True gives each key its own Parameter
            self.lm_head.weight = self.model.embed_tokens.weight
        return result


def checked_positions(config: ModernLMConfig, input_ids: object, positions: object) -> Tensor:
    """ValueError for ids or positions the model cannot embed; positions default 0..T-1."""
    if not isinstance(input_ids, Tensor):
        raise ArgumentTypeError(f"input_ids must be a Tensor, got {type(input_ids).__name__}")
    if input_ids.dtype != torch.long or input_ids.dim() != 2 or 0 in input_ids.shape:
        raise ValueError(
            f"input_ids must be a long [B, T] tensor with B, T >= 1, got "
            f"{input_ids.dtype} {tuple(input_ids.shape)}"
        )
    _check_not_meta("input_ids", input_ids)
    vocab, context = config.vocab_size, config.max_position_embeddings
    if bool(((input_ids < 0) | (input_ids >= vocab)).any()):
        raise ValueError(f"input_ids must lie in [0, {vocab})")
    if positions is None:
        T = input_ids.shape[1]
        if context < T:
            raise ValueError(f"{T} tokens exceed max_position_embeddings {context}")
        return torch.arange(T, device=input_ids.device).expand_as(input_ids)
    if not isinstance(positions, Tensor):
        raise ArgumentTypeError(f"positions must be a Tensor, got {type(positions).__name__}")
    if positions.dtype != torch.long or positions.shape != input_ids.shape:
        raise ValueError(
            f"positions must be long {tuple(input_ids.shape)} like input_ids, got "
            f"{positions.dtype} {tuple(positions.shape)}"
        )
    _check_not_meta("positions", positions)
    if bool(((positions < 0) | (positions >= context)).any()):
        raise ValueError(f"positions must lie in [0, max_position_embeddings={context})")
    return positions


def _check_not_meta(name: str, value: Tensor) -> None:
    """A meta tensor has a shape but no values: nothing to range-check or to embed."""
    if value.is_meta:
        raise ValueError(f"{name} is a meta tensor: it holds no values to check or embed")


def _init_weights(module: nn.Module) -> None:
    """N(0, 0.02) projections and embedding, unit norm gains: initial logits near zero,
    so the first loss is close to ln(vocab_size), tied or not."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, std=INITIALIZER_RANGE)
    elif isinstance(module, RMSNorm):
        nn.init.ones_(module.weight)


__all__ = ["DecoderLayer", "ModernLM", "ModernLMOutput", "ModernModel", "checked_positions"]
