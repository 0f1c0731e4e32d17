"""Throwaway faithful prefix cache: a plain dict plus a manual recency list."""

from __future__ import annotations

VARIABLE = "PREFIX_CACHE_MODULE"  # graded through this variable by `nox -s known_bad`

from dataclasses import dataclass
from types import SimpleNamespace

import torch


@dataclass(frozen=True)
class PrefixCacheNamespace:
    model_id: str
    cache_id: str


@dataclass(frozen=True)
class PrefixMatch:
    tokens: tuple
    past_key_values: tuple

    @property
    def prefix_length(self):
        return len(self.tokens)


def _ids(tokens):
    if isinstance(tokens, torch.Tensor):
        return tuple(tokens.reshape(-1).tolist())
    return tuple(int(t) for t in tokens)


def _copy(past, n):
    out = []
    for k, v in past:
        k2 = torch.empty_like(k[:, :, :n], memory_format=torch.contiguous_format)
        v2 = torch.empty_like(v[:, :, :n], memory_format=torch.contiguous_format)
        k2.copy_(k[:, :, :n])
        v2.copy_(v[:, :, :n])
        out.append((k2, v2))
    return tuple(out)


class PrefixCache:
    def __init__(self, block_size, max_entries):
        self.block_size = block_size
        self.max_entries = max_entries
        self.table = {}
        self.recency = []  # least recent first

    @property
    def entry_count(self):
        return len(self.table)

    def _touch(self, key):
        if key in self.recency:
            self.recency.remove(key)
        self.recency.append(key)

    def store(self, namespace, tokens, past_key_values, start_position=0):
        ids = _ids(tokens)
        n_blocks = len(ids) // self.block_size
        for b in range(n_blocks, 0, -1):  # longest first, unlike the reference
            n = b * self.block_size
            key = (namespace.model_id, namespace.cache_id, start_position, ids[:n])
            self.table[key] = _copy(past_key_values, n)  # latest store wins
            self._touch(key)
        while len(self.table) > self.max_entries:
            del self.table[self.recency.pop(0)]

    def lookup_longest(self, namespace, tokens, start_position=0, max_length=None):
        ids = _ids(tokens)
        limit = len(ids) if max_length is None else min(len(ids), max_length)
        n = (limit // self.block_size) * self.block_size
        while n > 0:
            key = (namespace.model_id, namespace.cache_id, start_position, ids[:n])
            if key in self.table:
                self._touch(key)
                return PrefixMatch(ids[:n], _copy(self.table[key], n))
            n -= self.block_size
        return None

    def clear(self):
        self.table.clear()
        self.recency.clear()


class PrefixCachedRunner:
    def __init__(self, model, cache, namespace):
        self.model, self.cache, self.namespace = model, cache, namespace

    def prefill(self, input_ids, positions):
        T = input_ids.shape[1]
        origin = positions[0, 0].item()
        cap = T - 1 - (T - 1) % self.cache.block_size
        match = self.cache.lookup_longest(self.namespace, input_ids, origin, cap)
        r = 0 if match is None else match.prefix_length
        kwargs = {}
        if match is not None:
            kwargs = dict(
                past_key_values=match.past_key_values,
                cache_lengths=torch.full((1,), r, dtype=torch.long, device=input_ids.device),
                cache_start_positions=positions[:, 0].clone(),
            )
        out = self.model(input_ids[:, r:], positions[:, r:], use_cache=True, **kwargs)
        self.cache.store(self.namespace, input_ids, out.past_key_values, origin)
        return SimpleNamespace(
            logits=out.logits,
            logit_start=r,
            reused_tokens=r,
            past_key_values=out.past_key_values,
            cache_lengths=out.cache_lengths,
            cache_start_positions=out.cache_start_positions,
        )
