"""MoECausalLM: M02's decoder with a SparseMoE in place of the SwiGLU of selected layers.

MoECausalLM
  model.embed_tokens, model.rotary_emb, model.norm, lm_head     as in modern_lm.ModernLM
  model.layers.N.{input_layernorm, self_attn, post_attention_layernorm}   modern_lm's layers
  model.layers.N.mlp        a SparseMoE where ``config.is_moe_layer(N)``, else SwiGLU:
    .gate.weight [E, C], .experts.e.{gate,up}_proj.weight [F, C], .experts.e.down_proj.weight [C, F]

The attention block, norms, rotary tables, loss and checkpoint loading are modern_lm's own
(``DecoderLayer``, ``RMSNorm``, ``RotaryEmbedding``, ``shifted_cross_entropy``,
``atomic_load``); only the feed-forward of a MoE layer and the router telemetry are new.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from torch import Tensor, nn
from torch.nn.modules.module import _IncompatibleKeys

from modern_lm import (
    DecoderLayer,
    RMSNorm,
    RotaryEmbedding,
    atomic_load,
    check_labels,
    checked_positions,
    shifted_cross_entropy,
)

from .config import MoELMConfig
from .sparse_moe import MoEOutput, SparseMoE

INITIALIZER_RANGE = 0.02  # std of every projection and the embedding (M02's, Llama's)


@dataclass(frozen=True)
class MoELMOutput:
    logits: Tensor  # [B, T, V]
    loss: Tensor | None = None
    router_logits: tuple[Tensor, ...] = ()  # one [B*T, E] per MoE layer, in layer order
    expert_counts: tuple[Tensor, ...] = ()  # one [E] per MoE layer


class MoEDecoderLayer(DecoderLayer):
    """M02's pre-norm block; its ``mlp`` is a SparseMoE when ``moe`` is set."""

    def __init__(self, config: MoELMConfig, moe: bool) -> None:
        super().__init__(config)
        if moe:  # the same path, `mlp`, so M02's other checkpoint names stay as they are
            mixture = SparseMoE(
                config.hidden_size,
                config.intermediate_size,
                config.num_experts,
                config.experts_per_token,
            )
            self.register_module("mlp", mixture)

    def forward_routed(
        self, x: Tensor, cos: Tensor, sin: Tensor
    ) -> tuple[Tensor, MoEOutput | None]:
        x = x + self.dropout(self.self_attn(self.input_layernorm(x), cos, sin))
        mixed = self.mlp(self.post_attention_layernorm(x))
        if isinstance(mixed, MoEOutput):
            return x + self.dropout(mixed.hidden_states), mixed
        return x + self.dropout(mixed), None


class MoEModel(nn.Module):
    """Embedding, layers and final norm: ids and positions -> hidden states and routing."""

    def __init__(self, config: MoELMConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.rotary_emb = RotaryEmbedding(config.head_dim, config.rope_theta)
        self.layers = nn.ModuleList(
            MoEDecoderLayer(config, config.is_moe_layer(i)) for i in range(config.num_hidden_layers)
        )
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, input_ids: Tensor, positions: Tensor) -> tuple[Tensor, list[MoEOutput]]:
        x = self.dropout(self.embed_tokens(input_ids))
        cos, sin = self.rotary_emb(positions, x.dtype)
        routed = []
        for layer in self.layers:
            x, moe = cast(MoEDecoderLayer, layer).forward_routed(x, cos, sin)
            if moe is not None:
                routed.append(moe)
        out: Tensor = self.norm(x)
        return out, routed


class MoECausalLM(nn.Module):
    """``forward(input_ids, positions=None, labels=None) -> MoELMOutput``."""

    def __init__(self, config: MoELMConfig) -> None:
        super().__init__()
        if not isinstance(config, MoELMConfig):
            raise TypeError(f"config must be a MoELMConfig, got {type(config).__name__}")
        self.config = config
        self.model = MoEModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.apply(_init_weights)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight  # one Parameter

    def forward(
        self, input_ids: Tensor, positions: Tensor | None = None, labels: Tensor | None = None
    ) -> MoELMOutput:
        positions = checked_positions(self.config, input_ids, positions)
        if labels is not None:
            check_labels(labels, (positions.shape[0], positions.shape[1]), self.config.vocab_size)
        hidden, routed = self.model(input_ids, positions)
        logits: Tensor = self.lm_head(hidden)
        loss = None if labels is None else shifted_cross_entropy(logits, labels)
        return MoELMOutput(
            logits,
            loss,
            tuple(moe.router_logits for moe in routed),
            tuple(moe.expert_counts for moe in routed),
        )

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Atomic (modern_lm's ``atomic_load``): a checkpoint that does not fit is refused
        before any copy; a tied head stays the embedding's Parameter."""
        result = atomic_load(self, state_dict, strict=strict, assign=assign)
        if self.config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        return result


def _init_weights(module: nn.Module) -> None:
    """M02's initialisation: N(0, 0.02) projections (routers and experts too) and
    embedding, unit norm gains, so the first loss is close to ln(vocab_size)."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, std=INITIALIZER_RANGE)
    elif isinstance(module, RMSNorm):
        nn.init.ones_(module.weight)


__all__ = ["MoECausalLM", "MoEDecoderLayer", "MoELMOutput", "MoEModel"]
