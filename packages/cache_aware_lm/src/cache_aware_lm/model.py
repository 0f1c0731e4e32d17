"""CacheAwareCausalLM: a GPT-2-shaped decoder whose rows carry their own cache state.

Same shape as tinygpt (multi-head attention with a fused biased ``qkv_proj``,
learned absolute positions, pre-norm LayerNorm blocks, exact-GELU MLP, tied LM
head), but every batch row has its own cache length and absolute position
origin, so one batch can mix requests with different cached prefixes.
"""

from __future__ import annotations

from torch import Tensor, nn

from tinygpt import GPTConfig

from .attention import AttentionKernel, grouped_query_attention, merge_heads, split_heads
from .cache_update import CacheWriter, FunctionalCacheWriter
from .generation import greedy_generate
from .masking import absolute_position_mask
from .output import CacheAwareOutput, LayerKV, PastKeyValues
from .validation import ModelGeometry, validate_forward_inputs


class CacheAwareAttention(nn.Module):
    """Multi-head attention in three steps: project K/V, write the cache, attend."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.qkv_proj = nn.Linear(config.d_model, 3 * config.d_model)
        self.out_proj = nn.Linear(config.d_model, config.d_model)

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """[B, T, C] -> q, k, v each [B, H, T, D] (fused [q | k | v] layout)."""
        q, k, v = self.qkv_proj(x).chunk(3, dim=-1)
        H = self.n_heads
        return split_heads(q, H), split_heads(k, H), split_heads(v, H)

    def forward(
        self,
        x: Tensor,
        mask: Tensor,
        cache_writer: CacheWriter,
        layer_index: int,
        attend: AttentionKernel = grouped_query_attention,
    ) -> tuple[Tensor, LayerKV]:
        q, k, v = self.project_qkv(x)
        keys, values = cache_writer.write(layer_index, k, v)  # [B, H, S, D]
        y = attend(q, keys, values, mask)  # [B, H, T, D]
        return self.out_proj(merge_heads(y)), (keys, values)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.up_proj = nn.Linear(config.d_model, config.d_ff)
        self.down_proj = nn.Linear(config.d_ff, config.d_model)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.down_proj(nn.functional.gelu(self.up_proj(x)))
        return out


class Block(nn.Module):
    """Pre-norm residual block: x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.attention = CacheAwareAttention(config)
        self.mlp_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.mlp = MLP(config)

    def forward(
        self,
        x: Tensor,
        mask: Tensor,
        cache_writer: CacheWriter,
        layer_index: int,
        attend: AttentionKernel = grouped_query_attention,
    ) -> tuple[Tensor, LayerKV]:
        attended, layer_kv = self.attention(
            self.attention_norm(x), mask, cache_writer, layer_index, attend
        )
        x = x + attended
        return x + self.mlp(self.mlp_norm(x)), layer_kv


class CacheAwareCausalLM(nn.Module):
    """The reference cache-aware model (see the package README for the contract).

    Inference-only: ``config.dropout`` must be 0.
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if config.dropout != 0.0:
            raise ValueError(f"CacheAwareCausalLM has no dropout; got dropout={config.dropout}")
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = nn.Embedding(config.context_length, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.final_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight  # tied: one Parameter

    @property
    def geometry(self) -> ModelGeometry:
        weight = self.token_embedding.weight
        return ModelGeometry(
            vocab_size=self.config.vocab_size,
            context_length=self.config.context_length,
            n_layers=self.config.n_layers,
            n_kv_heads=self.config.n_heads,
            head_dim=self.config.head_dim,
            dtype=weight.dtype,
            device=weight.device,
        )

    def embed(self, input_ids: Tensor, positions: Tensor) -> Tensor:
        """Token plus learned absolute-position embeddings, [B, T, C]."""
        embedded: Tensor = self.token_embedding(input_ids) + self.position_embedding(positions)
        return embedded

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
        """The unchecked body of ``forward``: embed, every block, final norm.

        The caller has validated the inputs and built ``mask`` for the writer's
        slots (``forward`` and the serving decoder do). Returns the normalised hidden
        states ``[B, T, C]`` (``lm_head`` turns them into logits) and each layer's
        attended keys/values as the writer returned them.
        """
        x = self.embed(input_ids, positions)
        present: list[LayerKV] = []
        for layer_index, block in enumerate(self.blocks):
            x, layer_kv = block(x, mask, cache_writer, layer_index, attend)
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


__all__ = ["CacheAwareCausalLM"]
