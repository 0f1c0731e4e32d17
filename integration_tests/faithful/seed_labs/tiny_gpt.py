# tiny gpt, blank-editor attempt: learned positions, pre-norm MHA blocks, functional cache.
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

LayerKV = tuple[Tensor, Tensor]
PastKeyValues = tuple[LayerKV, ...]


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
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} not divisible by n_heads {self.n_heads}")
        p = self.dropout
        if (
            isinstance(p, bool)
            or not isinstance(p, (int, float))
            or not math.isfinite(p)
            or not 0 <= p < 1
        ):
            raise ValueError(f"dropout must be a finite float in [0, 1), got {p!r}")
        e = self.layer_norm_eps
        if isinstance(e, bool) or not isinstance(e, (int, float)) or not math.isfinite(e) or e <= 0:
            raise ValueError(f"layer_norm_eps must be finite and > 0, got {e!r}")

    @property
    def head_dim(self):
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class CausalLMOutput:
    logits: Tensor
    loss: Tensor | None = None
    past_key_values: PastKeyValues | None = None


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.up_proj = nn.Linear(cfg.d_model, cfg.d_ff)
        self.down_proj = nn.Linear(cfg.d_ff, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.drop(self.down_proj(F.gelu(self.up_proj(x))))


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.nh, self.hd, self.p = cfg.n_heads, cfg.head_dim, cfg.dropout
        self.qkv_proj = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out_proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.resid_drop = nn.Dropout(cfg.dropout)

    def forward(self, x, past=None):
        B, T, C = x.shape
        q, k, v = self.qkv_proj(x).view(B, T, 3, self.nh, self.hd).permute(2, 0, 3, 1, 4)
        P = 0
        if past is not None:
            P = past[0].shape[2]
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        # key j may serve query i when j <= P + i (absolute coordinates)
        qpos = torch.arange(T, device=x.device)[:, None] + P
        kpos = torch.arange(P + T, device=x.device)[None, :]
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=kpos <= qpos, dropout_p=self.p if self.training else 0.0
        )
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.resid_drop(self.out_proj(y)), (k, v)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attention_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.attention = SelfAttention(cfg)
        self.mlp_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.mlp = FeedForward(cfg)

    def forward(self, x, past=None):
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
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layers)])
        self.final_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def _check_ids(self, ids):
        if not isinstance(ids, Tensor) or ids.dtype != torch.long or ids.dim() != 2:
            raise ValueError("input_ids must be a long tensor [B, T]")
        if ids.shape[0] < 1 or ids.shape[1] < 1:
            raise ValueError(f"input_ids must have B, T >= 1, got {tuple(ids.shape)}")
        if ((ids < 0) | (ids >= self.config.vocab_size)).any():
            raise ValueError("input_ids outside the vocabulary")
        if ids.device != self.token_embedding.weight.device:
            raise ValueError(
                f"input_ids on {ids.device}, model on {self.token_embedding.weight.device}"
            )

    def _check_past(self, past, B):
        c, w = self.config, self.token_embedding.weight
        if not isinstance(past, tuple) or len(past) != c.n_layers:
            raise ValueError(f"past_key_values must hold {c.n_layers} (key, value) pairs")
        S = None
        for i, pair in enumerate(past):
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise ValueError(f"past_key_values[{i}] must be a (key, value) pair")
            for t in pair:
                if not isinstance(t, Tensor) or t.dim() != 4:
                    raise ValueError(f"past_key_values[{i}] tensors must be [B, H, S, D]")
                b, h, s, d = t.shape
                if (b, h, d) != (B, c.n_heads, c.head_dim):
                    raise ValueError(f"past_key_values[{i}] has shape {tuple(t.shape)}")
                if S is None:
                    S = s
                if s != S:
                    raise ValueError("past_key_values layers must share one length")
                if t.dtype != w.dtype:
                    raise ValueError(f"past_key_values[{i}] dtype {t.dtype} != {w.dtype}")
                if t.device != w.device:
                    raise ValueError(f"past_key_values[{i}] on {t.device}, model on {w.device}")
        return S

    def forward(self, input_ids, labels=None, past_key_values=None, use_cache=False):
        self._check_ids(input_ids)
        B, T = input_ids.shape
        if labels is not None and (
            not isinstance(labels, Tensor) or labels.shape != input_ids.shape
        ):
            raise ValueError("labels must match input_ids")
        P = 0 if past_key_values is None else self._check_past(past_key_values, B)
        if P + T > self.config.context_length:
            raise ValueError(
                f"{P} cached + {T} new tokens exceed context length {self.config.context_length}"
            )
        with torch.inference_mode(not torch.is_grad_enabled()):
            pos = torch.arange(P, P + T, device=input_ids.device)
            x = self.drop(self.token_embedding(input_ids) + self.position_embedding(pos))
            new = []
            for i, blk in enumerate(self.blocks):
                x, kv = blk(x, None if past_key_values is None else past_key_values[i])
                new.append(kv)
            logits = self.lm_head(self.final_norm(x))
            loss = None
            if labels is not None:
                tgt = labels[:, 1:]
                if (tgt != -100).any():
                    loss = F.cross_entropy(
                        logits[:, :-1].reshape(-1, logits.shape[-1]),
                        tgt.reshape(-1),
                        ignore_index=-100,
                    )
                else:
                    loss = logits.sum() * 0.0
            return CausalLMOutput(logits, loss, tuple(new) if use_cache else None)

    def generate(
        self, input_ids, max_new_tokens, temperature=0.0, eos_token_id=None, generator=None
    ):
        self._check_ids(input_ids)
        if type(max_new_tokens) is not int or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
            raise ValueError(f"temperature must be a number, got {temperature!r}")
        if not math.isfinite(temperature) or temperature < 0:
            raise ValueError(f"temperature must be finite and >= 0, got {temperature!r}")
        if eos_token_id is not None and (
            type(eos_token_id) is not int or not 0 <= eos_token_id < self.config.vocab_size
        ):
            raise ValueError(f"eos_token_id must be a token id, got {eos_token_id!r}")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise ValueError("generator must be a torch.Generator")
        if input_ids.shape[1] + max_new_tokens > self.config.context_length:
            raise ValueError(
                f"{input_ids.shape[1]} + {max_new_tokens} tokens exceed context length {self.config.context_length}"
            )
        was_training = self.training
        self.eval()
        try:
            with torch.inference_mode():
                out = input_ids.clone()
                done = torch.zeros(out.shape[0], dtype=torch.bool, device=out.device)
                past, step = None, input_ids
                for _ in range(max_new_tokens):
                    r = self(step, past_key_values=past, use_cache=True)
                    past, last = r.past_key_values, r.logits[:, -1]
                    if temperature == 0:
                        nxt = last.argmax(-1)
                    else:
                        probs = F.softmax(last / temperature, dim=-1)
                        nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1)
                    if eos_token_id is not None:
                        nxt = torch.where(done, torch.full_like(nxt, eos_token_id), nxt)
                        done = done | (nxt == eos_token_id)
                    out = torch.cat([out, nxt[:, None]], dim=1)
                    step = nxt[:, None]
                    if eos_token_id is not None and bool(done.all()):
                        break
                return out
        finally:
            self.train(was_training)
