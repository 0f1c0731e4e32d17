# runtime prefix-cache extension: exact-prefix snapshots at block boundaries, entry-level LRU.
from collections import OrderedDict
from dataclasses import dataclass

import torch
from torch import Tensor


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
    if isinstance(tokens, Tensor):
        return tuple(int(t) for t in tokens.reshape(-1).tolist())
    return tuple(int(t) for t in tokens)


def _cut(pkv, L):
    with torch.inference_mode():
        return tuple((k[:, :, :L].clone(), v[:, :, :L].clone()) for k, v in pkv)


class PrefixCache:
    def __init__(self, block_size, max_entries):
        if block_size <= 0 or max_entries <= 0:
            raise ValueError("block_size and max_entries must be positive")
        self.block_size, self.max_entries = block_size, max_entries
        self._d = OrderedDict()

    @property
    def entry_count(self):
        return len(self._d)

    def clear(self):
        self._d.clear()

    def store(self, namespace, tokens, past_key_values, start_position=0):
        toks = _ids(tokens)
        for L in range(self.block_size, len(toks) + 1, self.block_size):
            key = (namespace, start_position, toks[:L])
            self._d[key] = _cut(past_key_values, L)
            self._d.move_to_end(key)
            while len(self._d) > self.max_entries:
                self._d.popitem(last=False)

    def lookup_longest(self, namespace, tokens, start_position=0, max_length=None):
        toks = _ids(tokens)
        n = len(toks) if max_length is None else min(max_length, len(toks))
        L = n // self.block_size * self.block_size
        while L > 0:
            key = (namespace, start_position, toks[:L])
            if key in self._d:
                self._d.move_to_end(key)
                return PrefixMatch(toks[:L], _cut(self._d[key], L))
            L -= self.block_size
        return None


@dataclass
class PrefillResult:
    logits: Tensor
    logit_start: int
    reused_tokens: int
    past_key_values: tuple
    cache_lengths: Tensor
    cache_start_positions: Tensor


class PrefixCachedRunner:
    def __init__(self, model, cache, namespace):
        self.model, self.cache, self.namespace = model, cache, namespace

    def prefill(self, input_ids, positions):
        toks = _ids(input_ids)
        start = int(positions[0, 0])
        T = len(toks)
        bs = self.cache.block_size
        cap = bs * ((T - 1) // bs)
        hit = (
            self.cache.lookup_longest(self.namespace, toks, start, max_length=cap)
            if cap > 0
            else None
        )
        with torch.inference_mode():
            if hit is None:
                r = 0
                out = self.model(input_ids, positions, use_cache=True)
            else:
                r = hit.prefix_length
                dev = input_ids.device
                out = self.model(
                    input_ids[:, r:],
                    positions[:, r:],
                    past_key_values=hit.past_key_values,
                    cache_lengths=torch.tensor([r], device=dev),
                    cache_start_positions=torch.tensor([start], device=dev),
                    use_cache=True,
                )
        self.cache.store(self.namespace, toks, out.past_key_values, start)
        return PrefillResult(
            out.logits, r, r, out.past_key_values, out.cache_lengths, out.cache_start_positions
        )
