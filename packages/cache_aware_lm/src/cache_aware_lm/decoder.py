"""CacheAwareDecoder: the forward / generate flow both cache-aware models share.

A subclass builds its own parts (``token_embedding``, ``blocks``, ``final_norm``,
``lm_head``) and says how tokens enter the blocks (``embed``, ``position_inputs``);
this base validates the call, picks the cache writer and mask, runs the blocks and
the head, and packs the output. ``make_cache_writer`` and ``attention_mask`` are
the seams a variant (or a known-bad candidate) overrides.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor, nn

from tinygpt import ArgumentTypeError

from .attention import AttentionKernel, grouped_query_attention
from .cache_update import CacheWriter, FunctionalCacheWriter
from .generation import greedy_generate
from .masking import position_mask
from .output import CacheAwareOutput, LayerKV, PastKeyValues
from .validation import ModelGeometry, validate_forward_inputs


class DecoderConfig(Protocol):
    """The config fields the shared flow reads (``GPTConfig`` and ``ModernConfig`` have them)."""

    @property
    def vocab_size(self) -> int: ...
    @property
    def context_length(self) -> int: ...
    @property
    def n_layers(self) -> int: ...
    @property
    def head_dim(self) -> int: ...


class CacheAwareDecoder(nn.Module):
    """Base of ``CacheAwareCausalLM`` and ``ModernCacheAwareLM`` (not a model by itself)."""

    config: DecoderConfig
    n_kv_heads: int  # key/value heads per layer in the cache
    token_embedding: nn.Embedding
    blocks: nn.ModuleList
    final_norm: nn.Module
    lm_head: nn.Linear

    @property
    def geometry(self) -> ModelGeometry:
        weight = self.token_embedding.weight
        return ModelGeometry(
            vocab_size=self.config.vocab_size,
            context_length=self.config.context_length,
            n_layers=self.config.n_layers,
            n_kv_heads=self.n_kv_heads,
            head_dim=self.config.head_dim,
            dtype=weight.dtype,
            device=weight.device,
        )

    def embed(self, input_ids: Tensor, positions: Tensor) -> Tensor:
        """Token ids (at absolute ``positions``) -> the first block's input, [B, T, C]."""
        raise NotImplementedError

    def position_inputs(self, positions: Tensor, dtype: torch.dtype) -> tuple[object, ...]:
        """What every block takes before the mask, computed once per forward (none by default)."""
        return ()

    def make_cache_writer(
        self, past: PastKeyValues | None, cache_lengths: Tensor, new_tokens: int
    ) -> CacheWriter:
        """Where this forward's K/V go (functional: new tensors, caller's cache unwritten)."""
        return FunctionalCacheWriter(past, cache_lengths, new_tokens)

    attention_mask = staticmethod(position_mask)  # absolute_position_mask, inputs pre-checked

    def run_blocks(
        self,
        input_ids: Tensor,
        positions: Tensor,
        mask: Tensor,
        cache_writer: CacheWriter,
        attend: AttentionKernel = grouped_query_attention,
    ) -> tuple[Tensor, PastKeyValues]:
        """The unchecked body of ``forward``: embed, every block, final norm.

        The caller has validated the inputs and built ``mask`` for the writer's
        slots (``forward`` and the serving decoder do). Returns the normalised hidden
        states ``[B, T, C]`` (``lm_head`` turns them into logits) and each layer's
        attended keys/values as the writer returned them.
        """
        x = self.embed(input_ids, positions)
        shared = self.position_inputs(positions, x.dtype)
        present: list[LayerKV] = []
        for layer_index, block in enumerate(self.blocks):
            x, layer_kv = block(x, *shared, mask, cache_writer, layer_index, attend)
            present.append(layer_kv)
        return self.final_norm(x), tuple(present)

    def forward(
        self,
        input_ids: Tensor,
        positions: Tensor,
        past_key_values: PastKeyValues | None = None,
        cache_lengths: Tensor | None = None,
        cache_start_positions: Tensor | None = None,
        use_cache: bool = False,
    ) -> CacheAwareOutput:
        state = validate_forward_inputs(
            input_ids, positions, past_key_values, cache_lengths, cache_start_positions,
            self.geometry,
        )  # fmt: skip
        if not isinstance(use_cache, bool):
            raise ArgumentTypeError(f"use_cache must be a bool, got {type(use_cache).__name__}")
        T = input_ids.shape[1]
        writer = self.make_cache_writer(state.past, state.lengths, T)
        new_lengths = state.lengths + T
        mask = self.attention_mask(positions, state.starts, new_lengths, writer.storage_length)

        hidden, present = self.run_blocks(input_ids, positions, mask, writer)
        logits = self.lm_head(hidden)

        if not use_cache:
            return CacheAwareOutput(logits=logits)
        return CacheAwareOutput(
            logits=logits,
            past_key_values=present,
            cache_lengths=new_lengths,
            cache_start_positions=state.starts.clone(),
        )

    def generate(
        self,
        input_ids: Tensor,
        positions: Tensor,
        max_new_tokens: int,
        eos_token_id: int | None = None,
    ) -> Tensor:
        """Greedy continuation (prompt plus new tokens); see ``greedy_generate``."""
        return greedy_generate(self, input_ids, positions, max_new_tokens, eos_token_id)
