"""Faithful M03 advanced written from the contract alone, in a shape unlike the reference's.

Plain modules under M02's checkpoint names (no modern_lm, no cache_aware_lm): RMSNorm in
float64, split-half RoPE with float64 angles, a manual softmax over K/V heads repeated
per group. The returned cache is a fresh storage of max(len + T) slots into which the
caller's slots are copied (padding and all: the contract leaves padding free) and the
new K/V scattered at slots len..len+T-1. The choices the contract leaves open, taken the
other way from the reference: make_test_model's head is **tied** to the embedding, the
output is a SimpleNamespace, padding keeps whatever the caller's storage held.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch
from torch import nn

VARIABLE = "CACHE_AWARE_MODERN_MODULE"  # graded through this variable by `nox -s known_bad`

V, C, L, H, K, D, F, CONTEXT = 16, 32, 2, 4, 2, 8, 64, 32
EPS, THETA = 1e-6, 10000.0


class Norm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(C))

    def forward(self, x):
        wide = x.double()
        normed = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + EPS)
        return normed.to(x.dtype) * self.weight


def rotate(x, positions):
    """x [B, n, T, D] at positions [B, T]: pairs (i, i + D/2) turn by position * THETA^(-2i/D)."""
    half = D // 2
    inverse = THETA ** -(torch.arange(half, dtype=torch.float64, device=x.device) * 2 / D)
    angles = positions.double()[:, None, :, None] * inverse
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    a, b = x[..., :half], x[..., half:]
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)


class SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q_proj = nn.Linear(C, H * D, bias=False)
        self.k_proj = nn.Linear(C, K * D, bias=False)
        self.v_proj = nn.Linear(C, K * D, bias=False)
        self.o_proj = nn.Linear(H * D, C, bias=False)


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(C, F, bias=False)
        self.up_proj = nn.Linear(C, F, bias=False)
        self.down_proj = nn.Linear(F, C, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.input_layernorm = Norm()
        self.self_attn = SelfAttention()
        self.post_attention_layernorm = Norm()
        self.mlp = MLP()


class Body(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(V, C)
        self.layers = nn.ModuleList(Layer() for _ in range(L))
        self.norm = Norm()


def split(x, heads):
    B, T, _ = x.shape
    return x.view(B, T, heads, D).transpose(1, 2)


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


class ContractLM(nn.Module):
    def __init__(self, tied: bool) -> None:
        super().__init__()
        self.model = Body()
        self.lm_head = nn.Linear(C, V, bias=False)
        if tied:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(
        self,
        input_ids,
        positions,
        past_key_values=None,
        cache_lengths=None,
        cache_start_positions=None,
        use_cache=False,
    ):
        weight = self.lm_head.weight
        past, lengths, starts = past_key_values, cache_lengths, cache_start_positions
        check_call(past, lengths, starts, positions, L, K, D, weight)
        B, T = input_ids.shape
        device = input_ids.device
        if past is None:
            lengths = torch.zeros(B, dtype=torch.long, device=device)
            starts = positions[:, 0].clone()
        new_lengths = lengths + T
        width = int(new_lengths.max())
        slot = torch.arange(width, device=device)
        valid = slot[None] < new_lengths[:, None]  # [B, W]
        allowed = valid[:, None, :] & (starts[:, None, None] + slot <= positions[:, :, None])
        where = (lengths[:, None] + torch.arange(T, device=device))[:, None, :, None]
        where = where.expand(B, K, T, D)
        x = self.model.embed_tokens(input_ids)
        present = []
        for index, layer in enumerate(self.model.layers):
            attention = layer.self_attn
            h = layer.input_layernorm(x)
            q = rotate(split(attention.q_proj(h), H), positions)
            k = rotate(split(attention.k_proj(h), K), positions)
            v = split(attention.v_proj(h), K)
            stored = []
            for kind, new in ((0, k), (1, v)):
                storage = x.new_zeros(B, K, width, D)
                if past is not None:
                    n = min(past[index][kind].shape[2], width)
                    storage[:, :, :n] = past[index][kind][:, :, :n]
                stored.append(storage.scatter(2, where, new))
            keys, values = stored
            group = H // K
            scores = q @ keys.repeat_interleave(group, dim=1).transpose(-1, -2) / math.sqrt(D)
            scores = scores.masked_fill(~allowed[:, None], float("-inf"))
            clean = torch.where(valid[:, None, :, None], values, torch.zeros_like(values))
            y = scores.softmax(dim=-1) @ clean.repeat_interleave(group, dim=1)
            x = x + attention.o_proj(y.transpose(1, 2).reshape(B, T, H * D))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
            present.append((keys, values))
        logits = self.lm_head(self.model.norm(x))
        if not use_cache:
            return SimpleNamespace(
                logits=logits, past_key_values=None, cache_lengths=None, cache_start_positions=None
            )
        return SimpleNamespace(
            logits=logits,
            past_key_values=tuple(present),
            cache_lengths=new_lengths,
            cache_start_positions=starts.clone(),
        )

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


def _build(tied: bool) -> ContractLM:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(97)
        model = ContractLM(tied)
    return model.eval()


def make_test_model() -> ContractLM:
    return _build(tied=True)


def make_eos_test_model() -> ContractLM:
    """Token i embeds as e_i, every o_proj and down_proj is zero, the head maps i to its successor."""
    successor = {1: 0, 2: 3, 3: 0}
    model = _build(tied=False)
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
