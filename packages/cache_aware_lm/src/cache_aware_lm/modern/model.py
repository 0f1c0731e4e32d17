"""ModernCacheAwareLM: the cache-aware contract on a Llama-shaped decoder.

Grouped-query attention (the cache holds only the n_kv_heads key/value heads),
rotary positions taken from the absolute ``positions`` (no position table),
RMSNorm, SwiGLU. The LM head is untied from the token embedding, as in most
grouped-query models (Llama 2/3, Mistral); it also lets the EOS test model set
its transition table directly in ``lm_head``.
"""

from __future__ import annotations

from torch import Tensor, nn

from ..attention import AttentionKernel, grouped_query_attention
from ..cache_update import CacheWriter, FunctionalCacheWriter
from ..generation import greedy_generate
from ..masking import absolute_position_mask
from ..output import CacheAwareOutput, LayerKV, PastKeyValues
from ..validation import ModelGeometry, validate_forward_inputs
from .config import ModernConfig
from .layers import ModernBlock, RMSNorm
from .rotary import RotaryEmbedding


class ModernCacheAwareLM(nn.Module):
    """Same forward / generate contract as ``CacheAwareCausalLM``; K/V are [B, H_kv, S, D]."""

    def __init__(self, config: ModernConfig) -> None:
        super().__init__()
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.rotary = RotaryEmbedding(config.head_dim, config.rope_theta)
        self.blocks = nn.ModuleList(ModernBlock(config) for _ in range(config.n_layers))
        self.final_norm = RMSNorm(config.d_model, config.rms_norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)

    @property
    def geometry(self) -> ModelGeometry:
        weight = self.token_embedding.weight
        return ModelGeometry(
            vocab_size=self.config.vocab_size,
            context_length=self.config.context_length,
            n_layers=self.config.n_layers,
            n_kv_heads=self.config.n_kv_heads,
            head_dim=self.config.head_dim,
            dtype=weight.dtype,
            device=weight.device,
        )

    def make_cache_writer(
        self, past: PastKeyValues | None, cache_lengths: Tensor, new_tokens: int
    ) -> CacheWriter:
        """Where this forward's K/V go (functional: new tensors, caller's cache unwritten)."""
        return FunctionalCacheWriter(past, cache_lengths, new_tokens)

    attention_mask = staticmethod(absolute_position_mask)

    def run_blocks(
        self,
        input_ids: Tensor,
        positions: Tensor,
        mask: Tensor,
        cache_writer: CacheWriter,
        attend: AttentionKernel = grouped_query_attention,
    ) -> tuple[Tensor, PastKeyValues]:
        """The unchecked body of ``forward``: embed, rotary angles, every block, final norm.

        As ``CacheAwareCausalLM.run_blocks``: inputs already validated, ``mask``
        built for the writer's slots; returns normalised hidden states ``[B, T, C]``
        and each layer's attended keys/values.
        """
        x = self.token_embedding(input_ids)
        rotary = self.rotary(positions, x.dtype)  # once per forward, shared by every layer
        present: list[LayerKV] = []
        for layer_index, block in enumerate(self.blocks):
            x, layer_kv = block(x, rotary, mask, cache_writer, layer_index, attend)
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
