"""Throwaway faithful implementation of the cache_aware_lm contract (written from docs/contracts.md).

Different internals on purpose: manual softmax with an additive float mask, per-row Python
loops to build caches (padding = NaN-free garbage copied through), untied head, own validation,
generate recomputes the full prefix each step (no cache), heads split differently.
"""

VARIABLE = "CACHE_AWARE_LM_MODULE"  # graded through this variable by `nox -s known_bad`


import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Out:
    logits: torch.Tensor
    past_key_values: object = None
    cache_lengths: object = None
    cache_start_positions: object = None


class Layer(nn.Module):
    def __init__(self, C, H, F):
        super().__init__()
        self.H = H
        self.n1 = nn.LayerNorm(C)
        self.q = nn.Linear(C, C)
        self.k = nn.Linear(C, C)
        self.v = nn.Linear(C, C)
        self.o = nn.Linear(C, C)
        self.n2 = nn.LayerNorm(C)
        self.f1 = nn.Linear(C, F)
        self.f2 = nn.Linear(F, C)

    def heads(self, x):
        B, T, C = x.shape
        return x.reshape(B, T, self.H, C // self.H).permute(0, 2, 1, 3)


class Faithful(nn.Module):
    def __init__(self, V=20, ctx=24, C=24, L=3, H=3, F=48):
        super().__init__()
        self.V, self.ctx, self.H, self.D = V, ctx, H, C // H
        self.tok = nn.Embedding(V, C)
        self.pos = nn.Embedding(ctx, C)
        self.layers = nn.ModuleList([Layer(C, H, F) for _ in range(L)])
        self.nf = nn.LayerNorm(C)
        self.head = nn.Linear(C, V, bias=False)

    def _check(self, ids, pos, past, lens, starts):
        dev = self.tok.weight.device
        for name, t in (("input_ids", ids), ("positions", pos)):
            if not torch.is_tensor(t) or t.dtype != torch.long or t.dim() != 2 or t.device != dev:
                raise ValueError(f"bad {name}")
        if pos.shape != ids.shape:
            raise ValueError("positions shape")
        if ((pos[:, 1:] - pos[:, :-1]) != 1).any():
            raise ValueError("positions not contiguous")
        if (pos < 0).any() or (pos >= self.ctx).any():
            raise ValueError("position beyond context length")
        B = ids.shape[0]
        if past is None:
            if lens is not None or starts is not None:
                raise ValueError("metadata without cache")
            return
        if lens is None or starts is None:
            raise ValueError("cache without metadata")
        for name, m in (("lengths", lens), ("starts", starts)):
            if not torch.is_tensor(m) or m.dtype != torch.long or tuple(m.shape) != (B,):
                raise ValueError(f"bad {name}")
            if m.device != dev:
                raise ValueError(f"{name} device")
            if (m < 0).any():
                raise ValueError(f"negative {name}")
        if not isinstance(past, (tuple, list)) or len(past) != len(self.layers):
            raise ValueError("layer count")
        S = None
        for pair in past:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError("pair")
            for t in pair:
                if not torch.is_tensor(t) or t.dim() != 4:
                    raise ValueError("cache tensor")
                if t.device != dev or t.dtype != self.tok.weight.dtype:
                    raise ValueError("cache device/dtype")
                if t.shape[0] != B or t.shape[1] != self.H or t.shape[3] != self.D:
                    raise ValueError("cache shape")
                S = t.shape[2] if S is None else S
                if t.shape[2] != S:
                    raise ValueError("storage length")
        if (lens > S).any():
            raise ValueError("length beyond storage")
        if (pos[:, 0] != starts + lens).any():
            raise ValueError("position gap")

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
        B, T = input_ids.shape
        if past_key_values is None:
            lens = [0] * B
            starts = positions[:, 0].tolist()
        else:
            lens = cache_lengths.tolist()
            starts = cache_start_positions.tolist()
        new_lens = [n + T for n in lens]
        S_out = max(new_lens)
        # additive mask [B, 1, T, S_out]
        mask = torch.full((B, 1, T, S_out), float("-inf"))
        for b in range(B):
            for t in range(T):
                q = int(positions[b, t])
                for s in range(new_lens[b]):
                    if starts[b] + s <= q:
                        mask[b, 0, t, s] = 0.0
        mask = mask.to(input_ids.device)
        x = self.tok(input_ids) + self.pos(positions)
        present = []
        for li, layer in enumerate(self.layers):
            h = layer.n1(x)
            q, k, v = layer.heads(layer.q(h)), layer.heads(layer.k(h)), layer.heads(layer.v(h))
            ks, vs = [], []
            for b in range(B):
                kb = k.new_zeros(self.H, S_out, self.D)
                vb = v.new_zeros(self.H, S_out, self.D)
                if past_key_values is not None and lens[b] > 0:
                    kb[:, : lens[b]] = past_key_values[li][0][b, :, : lens[b]]
                    vb[:, : lens[b]] = past_key_values[li][1][b, :, : lens[b]]
                kb[:, lens[b] : lens[b] + T] = k[b]
                vb[:, lens[b] : lens[b] + T] = v[b]
                ks.append(kb)
                vs.append(vb)
            K, Vv = torch.stack(ks), torch.stack(vs)
            present.append((K, Vv))
            att = (q @ K.transpose(-1, -2)) / math.sqrt(self.D) + mask
            y = att.softmax(-1) @ Vv
            y = y.permute(0, 2, 1, 3).reshape(B, T, -1)
            x = x + layer.o(y)
            x = x + layer.f2(torch.nn.functional.gelu(layer.f1(layer.n2(x))))
        logits = self.head(self.nf(x))
        if not use_cache:
            return Out(logits)
        dev = input_ids.device
        return Out(
            logits,
            tuple(present),
            torch.tensor(new_lens, device=dev),
            torch.tensor(starts, device=dev),
        )

    @torch.no_grad()
    def generate(self, input_ids, positions, max_new_tokens, eos_token_id=None):
        if int(positions[:, -1].max()) + max_new_tokens >= self.ctx:
            raise ValueError("context length")
        mode = self.training
        self.eval()
        ids, pos = input_ids.clone(), positions.clone()
        done = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
        try:
            for _ in range(max_new_tokens):
                nxt = self(ids, pos).logits[:, -1].argmax(-1)
                if eos_token_id is not None:
                    nxt = torch.where(done, torch.full_like(nxt, eos_token_id), nxt)
                    done = done | (nxt == eos_token_id)
                ids = torch.cat([ids, nxt[:, None]], 1)
                pos = torch.cat([pos, pos[:, -1:] + 1], 1)
                if eos_token_id is not None and done.all():
                    break
        finally:
            self.train(mode)
        return ids


def make_test_model():
    g = torch.random.fork_rng()
    with g:
        torch.manual_seed(7)
        m = Faithful()
    return m.eval()


def make_eos_test_model():
    m = make_test_model()
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        for mod in m.modules():
            if isinstance(mod, nn.LayerNorm):
                mod.weight.fill_(1.0)
        m.tok.weight[:, : m.V] = torch.eye(m.V)[:, : m.tok.weight.shape[1]] if m.V <= 24 else 0
        nxt = {1: 0, 2: 3, 3: 0}
        for i in range(m.V):
            m.head.weight[nxt.get(i, 0), i] = 5.0
    return m.eval()
