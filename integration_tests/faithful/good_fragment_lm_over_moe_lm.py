"""Faithful M10 written from packages/fragment_lm/README.md's Contract alone, over the
published layers of moe_lm, modern_lm and cache_aware_lm.

Its shape is unlike the reference's: the model *is* a `moe_lm.MoECausalLM` (every layer a
MoE layer; its config a `MoELMConfig` subclass tied by default) with a cached forward of its
own; the mixture runs `SparseMoE.forward_vectorized`; the new K/V are appended to a copy of
the caller's whole storage (the slots past a row's length keep whatever the caller had
there) and scattered at each row's own length; attention is one masked SDPA call over
K/V repeated per query group; telemetry comes back as lists; the output is a plain class.
"""

from __future__ import annotations

VARIABLE = "FRAGMENT_LM_MODULE"  # graded through this variable by `nox -s known_bad`

from dataclasses import dataclass

import torch
from moe_lm import MoECausalLM, MoELMConfig
from torch.nn import functional as F

from cache_aware_lm import ModelGeometry, validate_forward_inputs
from modern_lm import apply_rotary, repeat_kv


@dataclass(frozen=True)
class FragmentConfig(MoELMConfig):
    tie_word_embeddings: bool = True


class FragmentOutput:
    def __init__(self, logits, cache=None, router=None):
        self.logits = logits
        self.past_key_values, self.cache_lengths, self.cache_start_positions = cache or (
            None, None, None,
        )  # fmt: skip
        self.router_logits, self.expert_counts = router or (None, None)


def append(past, new, lengths, storage):
    """The caller's storage copied and widened to `storage` slots, `new` at each row's length."""
    B, H, T, D = new.shape
    if past is None:
        out = new.new_zeros(B, H, storage, D)
    else:
        kept = past[:, :, :storage]
        room = new.new_zeros(B, H, storage - kept.shape[2], D)
        out = torch.cat((kept, room), dim=2)
    slots = (lengths[:, None] + torch.arange(T, device=new.device))[:, None, :, None]
    return out.scatter(2, slots.expand(B, H, T, D), new)


class PaperFragmentLM(MoECausalLM):
    def __init__(self, config):
        if not isinstance(config, FragmentConfig):
            raise TypeError("config must be a FragmentConfig")
        super().__init__(config)

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
        c = self.config
        weight = self.model.embed_tokens.weight
        geometry = ModelGeometry(
            c.vocab_size, c.max_position_embeddings, c.num_hidden_layers,
            c.num_key_value_heads, c.head_dim, weight.dtype, weight.device,
        )  # fmt: skip
        state = validate_forward_inputs(
            input_ids, positions, past_key_values, cache_lengths, cache_start_positions, geometry
        )
        B, T = input_ids.shape
        lengths, starts = state.lengths, state.starts
        storage = int((lengths + T).max())
        slot = torch.arange(storage, device=input_ids.device)
        visible = (slot[None, None, :] < (lengths + T)[:, None, None]) & (
            starts[:, None, None] + slot[None, None, :] <= positions[:, :, None]
        )  # [B, T, S]
        x = self.model.embed_tokens(input_ids)
        cos, sin = self.model.rotary_emb(positions, x.dtype)
        present, routers, counts = [], [], []
        for i, layer in enumerate(self.model.layers):
            attn = layer.self_attn
            h = layer.input_layernorm(x)
            q = apply_rotary(attn._heads(attn.q_proj(h), attn.n_heads), cos, sin)
            k = apply_rotary(attn._heads(attn.k_proj(h), attn.n_kv_heads), cos, sin)
            v = attn._heads(attn.v_proj(h), attn.n_kv_heads)
            past = None if state.past is None else state.past[i]
            keys = append(None if past is None else past[0], k, lengths, storage)
            values = append(None if past is None else past[1], v, lengths, storage)
            group = attn.n_heads // attn.n_kv_heads
            y = F.scaled_dot_product_attention(
                q, repeat_kv(keys, group), repeat_kv(values, group), attn_mask=visible[:, None]
            )
            x = x + attn.o_proj(y.transpose(1, 2).reshape(B, T, -1))
            mixed = layer.mlp.forward_vectorized(layer.post_attention_layernorm(x))
            x = x + mixed.hidden_states
            present.append((keys, values))
            routers.append(mixed.router_logits)
            counts.append(mixed.expert_counts)
        logits = self.lm_head(self.model.norm(x))
        cache = (tuple(present), lengths + T, starts.clone()) if use_cache else None
        router = (routers, counts) if return_router_state else None
        return FragmentOutput(logits, cache, router)
