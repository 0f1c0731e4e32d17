# advanced M03 attempt: per-row cache lengths and position origins over a tiny MHA decoder.
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from tiny_gpt import FeedForward, GPTConfig
from torch import Tensor, nn


@dataclass
class LMStep:
    logits: Tensor
    past_key_values: tuple | None = None
    cache_lengths: Tensor | None = None
    cache_start_positions: Tensor | None = None


class RowCachedAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.nh, self.hd = cfg.n_heads, cfg.head_dim
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x, past, lens):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.nh, self.hd).permute(2, 0, 3, 1, 4)
        S = int(lens.max()) + T
        slot = torch.arange(S, device=x.device)
        # new token t of row b lands in slot lens[b] + t
        dst = (
            (lens[:, None] + torch.arange(T, device=x.device))
            .view(B, 1, T, 1)
            .expand(B, self.nh, T, self.hd)
        )
        K = x.new_zeros(B, self.nh, S, self.hd)
        V = x.new_zeros(B, self.nh, S, self.hd)
        if past is not None:
            n = min(past[0].shape[2], S)
            keep = (slot[:n][None, :] < lens[:, None]).view(B, 1, n, 1)
            K[:, :, :n] = torch.where(keep, past[0][:, :, :n], 0.0)
            V[:, :, :n] = torch.where(keep, past[1][:, :, :n], 0.0)
        K.scatter_(2, dst, k)
        V.scatter_(2, dst, v)
        mask = slot.view(1, 1, 1, S) <= (lens[:, None] + torch.arange(T, device=x.device)).view(
            B, 1, T, 1
        )
        y = F.scaled_dot_product_attention(q, K, V, attn_mask=mask)
        return self.proj(y.transpose(1, 2).reshape(B, T, C)), (K, V)


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.attn = RowCachedAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.ff = FeedForward(cfg)

    def forward(self, x, past, lens):
        a, kv = self.attn(self.ln1(x), past, lens)
        x = x + a
        return x + self.ff(self.ln2(x)), kv


class CacheAwareCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.wpe = nn.Embedding(cfg.context_length, cfg.d_model)
        self.layers = nn.ModuleList([Layer(cfg) for _ in range(cfg.n_layers)])
        self.ln_f = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.head.weight = self.wte.weight

    @property
    def device(self):
        return self.wte.weight.device

    def _check(self, ids, pos, past, lens, starts):
        cfg = self.cfg
        if (
            not isinstance(ids, Tensor)
            or ids.dtype != torch.long
            or ids.dim() != 2
            or 0 in ids.shape
        ):
            raise ValueError("input_ids must be a non-empty long tensor [B, T]")
        if not isinstance(pos, Tensor) or pos.dtype != torch.long or pos.shape != ids.shape:
            raise ValueError("positions must be a long tensor shaped like input_ids")
        if ((ids < 0) | (ids >= cfg.vocab_size)).any():
            raise ValueError("input_ids outside the vocabulary")
        if ((pos < 0) | (pos >= cfg.context_length)).any():
            raise ValueError(f"positions must lie in [0, context length {cfg.context_length})")
        if (pos[:, 1:] - pos[:, :-1] != 1).any():
            raise ValueError("positions must be contiguous within each row")
        if ids.device != self.device or pos.device != self.device:
            raise ValueError(f"input_ids and positions must be on {self.device}")
        B = ids.shape[0]
        if past is None:
            if lens is not None or starts is not None:
                raise ValueError(
                    "cache_lengths / cache_start_positions given without past_key_values"
                )
            return
        if lens is None or starts is None:
            raise ValueError("past_key_values needs cache_lengths and cache_start_positions")
        for name, m in (("cache_lengths", lens), ("cache_start_positions", starts)):
            if not isinstance(m, Tensor) or m.dtype != torch.long or tuple(m.shape) != (B,):
                raise ValueError(f"{name} must be a long tensor [B={B}]")
            if (m < 0).any():
                raise ValueError(f"{name} must be non-negative")
            if m.device != self.device:
                raise ValueError(f"{name} on {m.device}, model on {self.device}")
        if not isinstance(past, (tuple, list)) or len(past) != cfg.n_layers:
            raise ValueError(f"past_key_values must hold {cfg.n_layers} layers")
        S = None
        for i, pair in enumerate(past):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"past_key_values[{i}] must be a (key, value) pair")
            for t in pair:
                if not isinstance(t, Tensor) or t.dim() != 4:
                    raise ValueError(f"past_key_values[{i}] must hold [B, H, S, D] tensors")
                S = t.shape[2] if S is None else S
                if tuple(t.shape) != (B, cfg.n_heads, S, cfg.head_dim):
                    raise ValueError(f"past_key_values[{i}] has shape {tuple(t.shape)}")
                if t.dtype != self.wte.weight.dtype:
                    raise ValueError(f"past_key_values[{i}] dtype {t.dtype}")
                if t.device != self.device:
                    raise ValueError(f"past_key_values[{i}] on {t.device}")
        if (lens > S).any():
            raise ValueError(f"cache_lengths beyond the cache storage length {S}")
        if (pos[:, 0] != starts + lens).any():
            raise ValueError(
                "position gap: positions[:, 0] must equal cache_start_positions + cache_lengths"
            )

    def forward(
        self,
        input_ids,
        positions,
        past_key_values=None,
        cache_lengths=None,
        cache_start_positions=None,
        use_cache=False,
    ):
        self._check(input_ids, positions, past_key_values, cache_lengths, cache_start_positions)
        with torch.inference_mode():
            B, T = input_ids.shape
            if past_key_values is None:
                lens = torch.zeros(B, dtype=torch.long, device=input_ids.device)
                starts = positions[:, 0].clone()
            else:
                lens, starts = cache_lengths, cache_start_positions
            x = self.wte(input_ids) + self.wpe(positions)
            cache = []
            for i, layer in enumerate(self.layers):
                x, kv = layer(x, None if past_key_values is None else past_key_values[i], lens)
                cache.append(kv)
            logits = self.head(self.ln_f(x))
            if not use_cache:
                return LMStep(logits)
            return LMStep(logits, tuple(cache), lens + T, starts.clone())

    def generate(self, input_ids, positions, max_new_tokens, eos_token_id=None):
        self._check(input_ids, positions, None, None, None)
        if type(max_new_tokens) is not int or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
        if eos_token_id is not None and (
            type(eos_token_id) is not int or not 0 <= eos_token_id < self.cfg.vocab_size
        ):
            raise ValueError(f"eos_token_id must be a token id, got {eos_token_id!r}")
        if int(positions[:, -1].max()) + max_new_tokens >= self.cfg.context_length:
            raise ValueError(
                f"generated positions would reach context length {self.cfg.context_length}"
            )
        was = self.training
        self.eval()
        try:
            with torch.inference_mode():
                seq = input_ids.clone()
                done = torch.zeros(seq.shape[0], dtype=torch.bool, device=seq.device)
                step = self(input_ids, positions, use_cache=True)
                for i in range(max_new_tokens):
                    nxt = step.logits[:, -1].argmax(-1)
                    if eos_token_id is not None:
                        nxt = torch.where(done, torch.full_like(nxt, eos_token_id), nxt)
                        done |= nxt == eos_token_id
                    seq = torch.cat([seq, nxt[:, None]], 1)
                    if i + 1 == max_new_tokens or (eos_token_id is not None and bool(done.all())):
                        break
                    step = self(
                        nxt[:, None],
                        positions[:, -1:] + i + 1,
                        step.past_key_values,
                        step.cache_lengths,
                        step.cache_start_positions,
                        use_cache=True,
                    )
                return seq
        finally:
            self.train(was)


def _small(vocab, ctx, layers):
    return GPTConfig(
        vocab_size=vocab, context_length=ctx, d_model=16, n_layers=layers, n_heads=2, d_ff=32
    )


def make_test_model():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1234)
        m = CacheAwareCausalLM(_small(16, 16, 2))
    return m.eval()


def make_eos_test_model():
    # token -> next: 1 -> 0, 2 -> 3, 3 -> 0, 0 -> 0, all carried by the MLP of a single layer
    nxt = [0, 0, 3, 0]
    m = CacheAwareCausalLM(_small(4, 6, 1))
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        m.wte.weight[:, :4] = torch.eye(4)
        for ln in (m.layers[0].ln1, m.layers[0].ln2, m.ln_f):
            ln.weight.fill_(1.0)
        ff = m.layers[0].ff
        ff.up_proj.weight[:4, :4] = torch.eye(4)
        for tok, to in enumerate(nxt):
            ff.down_proj.weight[to, tok] = 10.0
    return m  # as the seed's own: no .eval() (dropout 0 behaves as eval mode anyway)
