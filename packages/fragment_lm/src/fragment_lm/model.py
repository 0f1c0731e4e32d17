"""PaperFragmentLM: embedding -> N x {RMSNorm, RoPE-GQA with optional cache, residual,
RMSNorm, top-k MoE, residual} -> final RMSNorm -> tied logits.

PaperFragmentLM
  model.embed_tokens          Embedding [V, C]
  model.rotary_emb            RoPE angles (non-persistent buffer: no checkpoint key)
  model.layers.N.*            FragmentLayer (layers.py): Llama's and Mixtral's names
  model.norm                  final RMSNorm [C]
  lm_head                     [V, C]: the embedding's Parameter when tied (the default)

The forward follows cache_aware_lm's contract: row b's cache holds ``cache_lengths[b]``
tokens at absolute positions ``cache_start_positions[b] + slot``; the new tokens continue
it; the caller's cache is read, never written, and a new one is returned with
``use_cache``. cache_aware_lm's boundary checks (``validate_forward_inputs``), functional
cache writer and absolute-position mask do that work; modern_lm's layers and moe_lm's
``SparseMoE`` do the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from torch import Tensor, nn
from torch.nn.modules.module import _IncompatibleKeys

from cache_aware_lm import (
    FunctionalCacheWriter,
    LayerKV,
    ModelGeometry,
    PastKeyValues,
    absolute_position_mask,
    greedy_generate,
    validate_forward_inputs,
)
from modern_lm import ArgumentTypeError, RMSNorm, RotaryEmbedding, atomic_load, check_bool

from .config import FragmentConfig
from .layers import FragmentLayer

INITIALIZER_RANGE = 0.02  # std of every projection, router and the embedding (M02's)


@dataclass(frozen=True)
class PaperFragmentOutput:
    """Logits; the cache only with ``use_cache``; the router state only when requested."""

    logits: Tensor  # [B, T, V]
    past_key_values: PastKeyValues | None = None  # one (key, value) [B, H_kv, S, D] per layer
    cache_lengths: Tensor | None = None  # [B] long: the old lengths + T
    cache_start_positions: Tensor | None = None  # [B] long
    router_logits: tuple[Tensor, ...] | None = None  # one [B*T, E] per layer, fp32+
    expert_counts: tuple[Tensor, ...] | None = None  # one [E] int64 per layer


class FragmentModel(nn.Module):
    """Embedding, layers and final norm (the checkpoint's ``model.`` prefix)."""

    def __init__(self, config: FragmentConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.rotary_emb = RotaryEmbedding(config.head_dim, config.rope_theta)
        self.layers = nn.ModuleList(FragmentLayer(config) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)


class PaperFragmentLM(nn.Module):
    """``forward(input_ids, positions, past_key_values=None, cache_lengths=None,
    cache_start_positions=None, use_cache=False, return_router_state=False)``."""

    def __init__(self, config: FragmentConfig) -> None:
        super().__init__()
        if not isinstance(config, FragmentConfig):
            raise ArgumentTypeError(f"config must be a FragmentConfig, got {type(config).__name__}")
        self.config = config
        self.model = FragmentModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.apply(_init_weights)
        self._tie()

    @property
    def geometry(self) -> ModelGeometry:
        """What the cache boundary checks against (and what a serving engine reads)."""
        weight = self.model.embed_tokens.weight
        return ModelGeometry(
            vocab_size=self.config.vocab_size,
            context_length=self.config.max_position_embeddings,
            n_layers=self.config.num_hidden_layers,
            n_kv_heads=self.config.num_key_value_heads,
            head_dim=self.config.head_dim,
            dtype=weight.dtype,
            device=weight.device,
        )

    def forward(
        self,
        input_ids: Tensor,
        positions: Tensor,
        past_key_values: PastKeyValues | None = None,
        cache_lengths: Tensor | None = None,
        cache_start_positions: Tensor | None = None,
        use_cache: bool = False,
        return_router_state: bool = False,
    ) -> PaperFragmentOutput:
        check_bool("use_cache", use_cache)
        check_bool("return_router_state", return_router_state)
        # Every check before any compute: a refused call changes nothing.
        state = validate_forward_inputs(
            input_ids, positions, past_key_values, cache_lengths, cache_start_positions,
            self.geometry,
        )  # fmt: skip
        T = input_ids.shape[1]
        writer = FunctionalCacheWriter(state.past, state.lengths, T)
        new_lengths = state.lengths + T
        mask = absolute_position_mask(positions, state.starts, new_lengths, writer.storage_length)

        x = self.model.embed_tokens(input_ids)
        rotary = self.model.rotary_emb(positions, x.dtype)  # once per forward, every layer
        present: list[LayerKV] = []
        router_logits: list[Tensor] = []
        counts: list[Tensor] = []
        for index, layer in enumerate(self.model.layers):
            x, layer_kv, mixed = cast(FragmentLayer, layer)(x, rotary, mask, writer, index)
            present.append(layer_kv)
            router_logits.append(mixed.router_logits)
            counts.append(mixed.expert_counts)
        logits: Tensor = self.lm_head(self.model.norm(x))

        cache: dict[str, Any] = {}
        if use_cache:
            cache = {
                "past_key_values": tuple(present),
                "cache_lengths": new_lengths,
                "cache_start_positions": state.starts.clone(),
            }
        if not return_router_state:
            return PaperFragmentOutput(logits, **cache)
        return PaperFragmentOutput(
            logits, **cache, router_logits=tuple(router_logits), expert_counts=tuple(counts)
        )

    def generate(
        self,
        input_ids: Tensor,
        positions: Tensor,
        max_new_tokens: int,
        eos_token_id: int | None = None,
    ) -> Tensor:
        """Greedy continuation over the cache (cache_aware_lm's ``greedy_generate``)."""
        return greedy_generate(self, input_ids, positions, max_new_tokens, eos_token_id)

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Atomic (modern_lm's ``atomic_load``): a checkpoint that does not fit is refused
        before any copy; a tied head stays the embedding's Parameter."""
        result = atomic_load(self, state_dict, strict=strict, assign=assign)
        self._tie()
        return result

    def _tie(self) -> None:
        if self.config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight  # one Parameter


def _init_weights(module: nn.Module) -> None:
    """M02's initialisation: N(0, 0.02) projections, routers and embedding, unit gains."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, std=INITIALIZER_RANGE)
    elif isinstance(module, RMSNorm):
        nn.init.ones_(module.weight)


__all__ = ["FragmentModel", "PaperFragmentLM", "PaperFragmentOutput"]
