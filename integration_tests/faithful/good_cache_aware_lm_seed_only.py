"""Seed-only faithful cache_aware_lm: the contract's work and only the checks its page names.

Written from docs/contracts.md's cache_aware_lm section alone, in a shape unlike the
reference's: one pre-norm block type with separate Q/K/V projections and learned absolute
positions looked up from `positions`; each row's valid cache prefix is gathered out of
the padded storage and re-packed with the new keys (a per-row loop), and a boolean
key-position mask `key <= query` (padding marked with a position past every query) goes
to SDPA. Validation is exactly the page's list (metadata present with the cache, long
`[B]`, non-negative, on the model's device, inside the storage; positions contiguous from
`start + length`; the cache's layer count, shapes, dtype and device; the generation
bound): nothing about lists, meta tensors, ids, or argument kinds.
"""

from __future__ import annotations

VARIABLE = "CACHE_AWARE_LM_MODULE"  # graded through this variable by `nox -s known_bad`

from types import SimpleNamespace

import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.q = nn.Linear(width, width)
        self.k = nn.Linear(width, width)
        self.v = nn.Linear(width, width)
        self.o = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def split(self, x):
        B, T, C = x.shape
        return x.view(B, T, self.heads, C // self.heads).transpose(1, 2)

    def forward(self, x, query_pos, past, key_pos):
        h = self.norm1(x)
        q, k, v = self.split(self.q(h)), self.split(self.k(h)), self.split(self.v(h))
        if past is not None:
            k = torch.cat((past[0], k), dim=2)
            v = torch.cat((past[1], v), dim=2)
        allowed = key_pos[:, None, None, :] <= query_pos[:, None, :, None]  # [B, 1, T, S]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        B, _, T, _ = y.shape
        x = x + self.o(y.transpose(1, 2).reshape(B, T, -1))
        return x + self.down(F.gelu(self.up(self.norm2(x)))), (k, v)


class MixedPrefixLM(nn.Module):
    def __init__(self, vocab: int, context: int, width: int, layers: int, heads: int) -> None:
        super().__init__()
        self.context_length = context
        self.heads = heads
        self.tokens = nn.Embedding(vocab, width)
        self.places = nn.Embedding(context, width)
        self.layers = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    # -- the page's checks -------------------------------------------------------------
    def _check_metadata(self, name, value, batch):
        device = self.head.weight.device
        if value.dtype != torch.long or value.shape != (batch,):
            raise ValueError(f"{name} must be a long [B] tensor")
        if value.device != device:
            raise ValueError(f"{name} must be on {device}")
        if (value < 0).any():
            raise ValueError(f"{name} must be non-negative")

    def _check_cache(self, past, lengths, starts, positions):
        batch = positions.shape[0]
        if (past is None) != (lengths is None) or (past is None) != (starts is None):
            raise ValueError("past_key_values, cache_lengths, cache_start_positions go together")
        expected_start = positions[:, 0]
        if past is not None:
            self._check_metadata("cache_lengths", lengths, batch)
            self._check_metadata("cache_start_positions", starts, batch)
            if len(past) != len(self.layers):
                raise ValueError("past_key_values needs one (key, value) pair per layer")
            weight = self.head.weight
            head_dim = weight.shape[1] // self.heads
            storage = None
            for pair in past:
                if len(pair) != 2:
                    raise ValueError("past_key_values: each layer is a (key, value) pair")
                for tensor in pair:
                    if tensor.dim() != 4 or tensor.shape[0] != batch:
                        raise ValueError("past_key_values tensors must be [B, H, S, D]")
                    if tensor.shape[1] != self.heads or tensor.shape[3] != head_dim:
                        raise ValueError("past_key_values heads or head dim do not match")
                    if tensor.dtype != weight.dtype or tensor.device != weight.device:
                        raise ValueError("past_key_values dtype or device does not match")
                    storage = tensor.shape[2] if storage is None else storage
                    if tensor.shape[2] != storage:
                        raise ValueError("past_key_values storage lengths differ")
            if (lengths > storage).any():
                raise ValueError("cache_lengths beyond the cache storage")
            expected_start = starts + lengths
        steps = positions - positions[:, :1]
        ramp = torch.arange(positions.shape[1], device=positions.device)
        if not torch.equal(steps, ramp[None].expand_as(steps)):
            raise ValueError("positions must be contiguous within each row (a position gap)")
        if not torch.equal(positions[:, 0], expected_start):
            raise ValueError("positions must continue at cache_start_positions + cache_lengths")

    # -- forward -----------------------------------------------------------------------
    def forward(
        self,
        input_ids,
        positions,
        past_key_values=None,
        cache_lengths=None,
        cache_start_positions=None,
        use_cache=False,
    ):
        self._check_cache(past_key_values, cache_lengths, cache_start_positions, positions)
        B, T = input_ids.shape
        if past_key_values is None:
            cache_lengths = torch.zeros(B, dtype=torch.long, device=input_ids.device)
            cache_start_positions = positions[:, 0].clone()
            storage = 0
        else:
            storage = past_key_values[0][0].shape[2]
        slots = torch.arange(storage, device=input_ids.device)[None]
        cached_pos = cache_start_positions[:, None] + slots
        far = torch.iinfo(torch.long).max
        cached_pos = torch.where(slots < cache_lengths[:, None], cached_pos, far)
        key_pos = torch.cat((cached_pos, positions), dim=1)  # [B, S + T]
        x = self.tokens(input_ids) + self.places(positions)
        raw = []
        for index, layer in enumerate(self.layers):
            past = None
            if past_key_values is not None:  # padding may hold anything: zero it first
                keep = (slots < cache_lengths[:, None])[:, None, :, None]
                past = tuple(torch.where(keep, t, 0.0) for t in past_key_values[index])
            x, kv = layer(x, positions, past, key_pos)
            raw.append(kv)
        logits = self.head(self.norm(x))
        if not use_cache:
            return SimpleNamespace(
                logits=logits, past_key_values=None, cache_lengths=None, cache_start_positions=None
            )
        new_lengths = cache_lengths + T
        width = int(new_lengths.max())
        packed = []
        for key, value in raw:
            layer = []
            for tensor in (key, value):
                out = tensor.new_zeros(B, tensor.shape[1], width, tensor.shape[3])
                for row in range(B):
                    n = int(cache_lengths[row])
                    out[row, :, :n] = tensor[row, :, :n]
                    out[row, :, n : n + T] = tensor[row, :, storage:]
                layer.append(out)
            packed.append((layer[0], layer[1]))
        return SimpleNamespace(
            logits=logits,
            past_key_values=tuple(packed),
            cache_lengths=new_lengths,
            cache_start_positions=cache_start_positions.clone(),
        )

    @torch.no_grad()
    def generate(self, input_ids, positions, max_new_tokens, eos_token_id=None):
        if int(positions[:, -1].max()) + max_new_tokens >= self.context_length:
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


def make_test_model() -> MixedPrefixLM:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1234)
        model = MixedPrefixLM(vocab=16, context=16, width=16, layers=2, heads=2)
    return model.eval()


def make_eos_test_model() -> MixedPrefixLM:
    """Greedy 1 -> 0, 2 -> 3, 3 -> 0, 0 -> 0 (EOS 0), whatever the prefix: the blocks add
    nothing, token i embeds as 4 e_i, and the head reads e_i out as its successor."""
    successor = {0: 0, 1: 0, 2: 3, 3: 0}
    model = MixedPrefixLM(vocab=4, context=6, width=4, layers=1, heads=1)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.tokens.weight.copy_(4.0 * torch.eye(4))
        model.norm.weight.fill_(1.0)
        for block in model.layers:
            block.norm1.weight.fill_(1.0)
            block.norm2.weight.fill_(1.0)
        for token, nxt in successor.items():
            model.head.weight[nxt, token] = 1.0
    return model
