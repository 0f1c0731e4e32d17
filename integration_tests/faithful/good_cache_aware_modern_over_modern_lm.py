"""Faithful M03 advanced built over modern_lm's published classes: M02 itself made cache-aware.

`CachedModernLM` subclasses `modern_lm.ModernLM` (its module tree, init, RMSNorm, rotary
table and SwiGLU as they are) and replaces `forward` with the cache-aware one: new K/V are
concatenated after the caller's storage (padding zeroed first), a boolean mask of absolute
key positions goes to SDPA over `modern_lm.repeat_kv`, and each row's valid slots are
re-packed into the returned cache by a per-row loop (the layout the contract states).
Untied head, a small output dataclass of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor
from torch.nn import functional

from modern_lm import ModernLM, ModernLMConfig, apply_rotary, repeat_kv

VARIABLE = "CACHE_AWARE_MODERN_MODULE"  # graded through this variable by `nox -s known_bad`

CONTEXT = 32
CONFIG = ModernLMConfig(
    vocab_size=16,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=8,
    intermediate_size=64,
    max_position_embeddings=CONTEXT,
    rms_norm_eps=1e-6,
)


@dataclass
class Output:
    logits: Tensor
    past_key_values: tuple | None = None
    cache_lengths: Tensor | None = None
    cache_start_positions: Tensor | None = None


# -- the contract's refusals -----------------------------------------------------------
def _check_metadata(name, value, batch, device):
    if not isinstance(value, torch.Tensor) or value.dtype != torch.long or value.shape != (batch,):
        raise ValueError(f"{name} must be a long [B] tensor")
    if value.device != device:
        raise ValueError(f"{name} must be on {device}")
    if bool((value < 0).any()):
        raise ValueError(f"{name} must be non-negative")


def check_call(past, lengths, starts, positions, layers, kv_heads, head_dim, weight):
    """ValueError for every refusal the cache-aware contract lists, before any work."""
    batch = positions.shape[0]
    if (past is None) != (lengths is None) or (past is None) != (starts is None):
        raise ValueError("past_key_values, cache_lengths, cache_start_positions go together")
    first = positions[:, 0]
    if past is not None:
        _check_metadata("cache_lengths", lengths, batch, weight.device)
        _check_metadata("cache_start_positions", starts, batch, weight.device)
        if not isinstance(past, (tuple, list)) or len(past) != layers:
            raise ValueError("past_key_values needs one (key, value) pair per layer")
        storage = None
        for pair in past:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError("past_key_values: each layer is a (key, value) pair")
            for tensor in pair:
                if not isinstance(tensor, torch.Tensor) or tensor.dim() != 4:
                    raise ValueError("past_key_values tensors must be [B, K, S, D]")
                if tensor.shape[0] != batch or tensor.shape[1] != kv_heads:
                    raise ValueError("past_key_values batch or key/value heads do not match")
                if tensor.shape[3] != head_dim:
                    raise ValueError("past_key_values head dim does not match")
                if tensor.dtype != weight.dtype or tensor.device != weight.device:
                    raise ValueError("past_key_values dtype or device does not match")
                storage = tensor.shape[2] if storage is None else storage
                if tensor.shape[2] != storage:
                    raise ValueError("past_key_values storage lengths differ")
        if bool((lengths > storage).any()):
            raise ValueError("cache_lengths beyond the cache storage")
        if not torch.equal(first, starts + lengths):
            raise ValueError("positions must continue at cache_start_positions + cache_lengths")
    steps = positions - positions[:, :1]
    ramp = torch.arange(positions.shape[1], device=positions.device)
    if not torch.equal(steps, ramp[None].expand_as(steps)):
        raise ValueError("positions must be contiguous within each row (a position gap)")


class CachedModernLM(ModernLM):
    def forward(
        self,
        input_ids,
        positions,
        past_key_values=None,
        cache_lengths=None,
        cache_start_positions=None,
        use_cache=False,
    ):
        config = self.config
        D, K = config.head_dim, config.num_key_value_heads
        past, lengths, starts = past_key_values, cache_lengths, cache_start_positions
        check_call(past, lengths, starts, positions, config.num_hidden_layers, K, D,
                   self.lm_head.weight)  # fmt: skip
        B, T = input_ids.shape
        device = input_ids.device
        storage = 0 if past is None else past[0][0].shape[2]
        if past is None:
            lengths = torch.zeros(B, dtype=torch.long, device=device)
            starts = positions[:, 0].clone()
        slots = torch.arange(storage, device=device)
        kept = slots[None] < lengths[:, None]  # [B, S]
        far = torch.iinfo(torch.long).max
        cached_positions = torch.where(kept, starts[:, None] + slots, far)
        key_positions = torch.cat((cached_positions, positions), dim=1)  # [B, S + T]
        allowed = key_positions[:, None, None, :] <= positions[:, None, :, None]
        trunk = self.model
        x = trunk.embed_tokens(input_ids)
        cos, sin = trunk.rotary_emb(positions, x.dtype)
        raw = []
        for index, layer in enumerate(trunk.layers):
            attention = layer.self_attn
            h = layer.input_layernorm(x)

            def heads(t, n):
                return t.view(B, T, n, D).transpose(1, 2)

            q = apply_rotary(heads(attention.q_proj(h), attention.n_heads), cos, sin)
            k = apply_rotary(heads(attention.k_proj(h), K), cos, sin)
            v = heads(attention.v_proj(h), K)
            if past is not None:
                keep = kept[:, None, :, None]
                k = torch.cat((torch.where(keep, past[index][0], 0.0), k), dim=2)
                v = torch.cat((torch.where(keep, past[index][1], 0.0), v), dim=2)
            group = attention.n_heads // K
            y = functional.scaled_dot_product_attention(
                q, repeat_kv(k, group), repeat_kv(v, group), attn_mask=allowed
            )
            x = x + attention.o_proj(y.transpose(1, 2).reshape(B, T, attention.n_heads * D))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
            raw.append((k, v))
        logits = self.lm_head(trunk.norm(x))
        if not use_cache:
            return Output(logits)
        new_lengths = lengths + T
        width = int(new_lengths.max())
        packed = []
        for key, value in raw:
            pair = []
            for tensor in (key, value):
                out = tensor.new_zeros(B, K, width, D)
                for row in range(B):
                    n = int(lengths[row])
                    out[row, :, :n] = tensor[row, :, :n]
                    out[row, :, n : n + T] = tensor[row, :, storage:]
                pair.append(out)
            packed.append((pair[0], pair[1]))
        return Output(logits, tuple(packed), new_lengths, starts.clone())

    @torch.no_grad()
    def generate(self, input_ids, positions, max_new_tokens, eos_token_id=None):
        if int(positions[:, -1].max()) + max_new_tokens >= CONTEXT:
            raise ValueError("a generated token's position would reach the context length")
        was_training = self.training
        self.eval()
        try:
            out = self(input_ids, positions, use_cache=True)
            tokens, last = input_ids.clone(), positions[:, -1:]
            done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
            for step in range(max_new_tokens):
                nxt = out.logits[:, -1].argmax(dim=-1)
                if eos_token_id is not None:
                    nxt = nxt.masked_fill(done, eos_token_id)
                    done = done | (nxt == eos_token_id)
                tokens = torch.cat((tokens, nxt[:, None]), dim=1)
                last = last + 1
                if (eos_token_id is not None and bool(done.all())) or step == max_new_tokens - 1:
                    break
                out = self(
                    nxt[:, None],
                    last,
                    out.past_key_values,
                    out.cache_lengths,
                    out.cache_start_positions,
                    use_cache=True,
                )
            return tokens
        finally:
            self.train(was_training)


def make_test_model() -> CachedModernLM:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(31)
        model = CachedModernLM(CONFIG)
    return model.eval()


def make_eos_test_model() -> CachedModernLM:
    """Token i embeds as e_i, every o_proj and down_proj is zero, the head maps i to its successor."""
    successor = {1: 0, 2: 3, 3: 0}
    model = make_test_model()
    V = CONFIG.vocab_size
    with torch.no_grad():
        model.model.embed_tokens.weight.zero_()
        model.model.embed_tokens.weight[:, :V] = torch.eye(V)
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.lm_head.weight.zero_()
        for token in range(V):
            model.lm_head.weight[successor.get(token, 0), token] = 1.0
    return model
