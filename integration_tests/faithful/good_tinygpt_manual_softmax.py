"""Throwaway faithful implementation of the tinygpt contract (written from docs/contracts.md).

Different internals on purpose: manual softmax with a triu "blocked" mask, heads split by
chunk + view + transpose, loss by log_softmax + gather, own validation and messages, a
decode loop that runs the model once per step (prompt first), no SDPA anywhere.
"""

from __future__ import annotations

VARIABLE = "TINY_GPT_MODULE"  # graded through this variable by `nox -s known_bad`

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int
    context_length: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    dropout: float = 0.0
    layer_norm_eps: float = 1e-5

    def __post_init__(self):
        for name in ("vocab_size", "context_length", "d_model", "n_layers", "n_heads", "d_ff"):
            v = getattr(self, name)
            if type(v) is not int or v <= 0:
                raise ValueError(f"bad {name}: {v!r}")
        if self.d_model % self.n_heads:
            raise ValueError("d_model % n_heads != 0")
        if type(self.dropout) not in (int, float) or not (0 <= self.dropout < 1):
            raise ValueError(f"bad dropout {self.dropout}")
        if type(self.layer_norm_eps) not in (int, float) or not (
            0 < self.layer_norm_eps < math.inf
        ):
            raise ValueError(f"bad layer_norm_eps {self.layer_norm_eps}")

    @property
    def head_dim(self):
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class CausalLMOutput:
    logits: torch.Tensor
    loss: torch.Tensor | None = None
    past_key_values: tuple | None = None


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.h = cfg.n_heads
        self.qkv_proj = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out_proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.attn_drop = nn.Dropout(cfg.dropout)
        self.resid_drop = nn.Dropout(cfg.dropout)

    def forward(self, x, past=None):
        B, T, C = x.shape
        q, k, v = self.qkv_proj(x).chunk(3, dim=-1)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        if past is not None:
            k = torch.cat([past[0], k], 2)
            v = torch.cat([past[1], v], 2)
        else:
            k, v = k.contiguous().clone(), v.contiguous().clone()
        P = k.size(2) - T
        blocked = torch.ones(T, P + T, dtype=torch.bool, device=x.device).triu(P + 1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(blocked, float("-inf"))
        att = self.attn_drop(torch.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.out_proj(y)), (k, v)


class Mlp(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.up_proj = nn.Linear(cfg.d_model, cfg.d_ff)
        self.down_proj = nn.Linear(cfg.d_ff, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.drop(self.down_proj(F.gelu(self.up_proj(x))))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attention_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.attention = Attention(cfg)
        self.mlp_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = Mlp(cfg)

    def forward(self, x, past):
        a, kv = self.attention(self.attention_norm(x), past)
        x = x + a
        return x + self.mlp(self.mlp_norm(x)), kv


class TinyGPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = nn.Embedding(config.context_length, config.d_model)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([Layer(config) for _ in range(config.n_layers)])
        self.final_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def _check(self, ids):
        dev = self.lm_head.weight.device
        if not torch.is_tensor(ids) or ids.dtype != torch.long or ids.ndim != 2:
            raise ValueError("input_ids must be long [B, T]")
        if ids.shape[0] == 0 or ids.shape[1] == 0:
            raise ValueError("empty input_ids")
        if ids.device != dev:
            raise ValueError("input_ids on wrong device")
        if (ids < 0).any() or (ids >= self.config.vocab_size).any():
            raise ValueError("token id outside vocabulary")

    def _check_past(self, past, B):
        cfg = self.config
        if not isinstance(past, tuple) or len(past) != cfg.n_layers:
            raise ValueError("past_key_values must be a tuple with one pair per layer")
        S = None
        w = self.lm_head.weight
        for pair in past:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise ValueError("each layer must be a (key, value) pair")
            for t in pair:
                if not torch.is_tensor(t) or t.ndim != 4:
                    raise ValueError("cache tensors must be 4-d")
                if t.shape[0] != B or t.shape[1] != cfg.n_heads or t.shape[3] != cfg.head_dim:
                    raise ValueError("cache shape mismatch")
                if t.dtype != w.dtype or t.device != w.device:
                    raise ValueError("cache dtype/device mismatch")
                S = t.shape[2] if S is None else S
                if t.shape[2] != S:
                    raise ValueError("cache lengths differ")
        return S

    def forward(self, input_ids, labels=None, past_key_values=None, use_cache=False):
        self._check(input_ids)
        B, T = input_ids.shape
        P = 0 if past_key_values is None else self._check_past(past_key_values, B)
        if P + T > self.config.context_length:
            raise ValueError("sequence exceeds the context length")
        pos = torch.arange(P, P + T, device=input_ids.device)
        x = self.drop(self.token_embedding(input_ids) + self.position_embedding(pos)[None])
        new = []
        for i, layer in enumerate(self.blocks):
            x, kv = layer(x, None if past_key_values is None else past_key_values[i])
            new.append(kv)
        logits = self.lm_head(self.final_norm(x))
        loss = None
        if labels is not None:
            lp = torch.log_softmax(logits[:, :-1], -1)
            tgt = labels[:, 1:]
            keep = tgt != -100
            nll = -lp.gather(-1, tgt.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            loss = (nll * keep).sum() / keep.sum().clamp(min=1)
        return CausalLMOutput(logits, loss, tuple(new) if use_cache else None)

    @torch.no_grad()
    def generate(
        self, input_ids, max_new_tokens, temperature=0.0, eos_token_id=None, generator=None
    ):
        self._check(input_ids)
        if type(max_new_tokens) is not int or max_new_tokens < 0:
            raise ValueError("bad max_new_tokens")
        if not isinstance(temperature, (int, float)) or not (0 <= temperature < math.inf):
            raise ValueError("bad temperature")
        if eos_token_id is not None and not (0 <= eos_token_id < self.config.vocab_size):
            raise ValueError("bad eos_token_id")
        if input_ids.shape[1] + max_new_tokens > self.config.context_length:
            raise ValueError("prompt + new tokens exceed the context length")
        mode = self.training
        self.eval()
        out = input_ids.clone()
        done = torch.zeros(out.shape[0], dtype=torch.bool, device=out.device)
        past, step_ids = None, input_ids
        try:
            for _ in range(max_new_tokens):
                o = self(step_ids, past_key_values=past, use_cache=True)
                past, logits = o.past_key_values, o.logits[:, -1]
                if temperature == 0:
                    nxt = logits.argmax(-1, keepdim=True)
                else:
                    probs = F.softmax(logits / temperature, dim=-1)
                    nxt = torch.multinomial(probs, 1, generator=generator)
                if eos_token_id is not None:
                    nxt[done] = eos_token_id
                    done |= nxt.squeeze(1) == eos_token_id
                out = torch.cat([out, nxt], 1)
                step_ids = nxt
                if eos_token_id is not None and done.all():
                    break
        finally:
            self.train(mode)
        return out
