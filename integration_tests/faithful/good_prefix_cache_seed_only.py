"""A stranger's prefix_cache doing exactly the contract's work: tick-stamped dict, no checks.

Written from the contract page alone: entries in a plain dict keyed by (namespace, start,
token tuple), each stamped with a counter that grows on every store and hit; the smallest
stamp goes first. No validation beyond what the page names (it names none).
"""

VARIABLE = "PREFIX_CACHE_MODULE"  # graded through this variable by `nox -s known_bad`

from dataclasses import dataclass
from itertools import count
from typing import NamedTuple

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


def _token_list(tokens):
    return tokens.reshape(-1).tolist() if isinstance(tokens, torch.Tensor) else list(tokens)


def _cut(past_key_values, length):
    return tuple(
        (key[:, :, :length].clone(), value[:, :, :length].clone()) for key, value in past_key_values
    )


class PrefixCache:
    def __init__(self, block_size, max_entries):
        self.block_size = block_size
        self.max_entries = max_entries
        self._entries = {}  # key -> [stamp, past_key_values]
        self._clock = count()

    @property
    def entry_count(self):
        return len(self._entries)

    def clear(self):
        self._entries.clear()

    def store(self, namespace, tokens, past_key_values, start_position=0):
        tokens = _token_list(tokens)
        for length in range(self.block_size, len(tokens) + 1, self.block_size):
            key = (namespace, start_position, tuple(tokens[:length]))
            self._entries[key] = [next(self._clock), _cut(past_key_values, length)]
            while len(self._entries) > self.max_entries:
                oldest = min(self._entries, key=lambda k: self._entries[k][0])
                del self._entries[oldest]

    def lookup_longest(self, namespace, tokens, start_position=0, max_length=None):
        tokens = _token_list(tokens)
        limit = len(tokens) if max_length is None else min(max_length, len(tokens))
        for length in range(limit - limit % self.block_size, 0, -self.block_size):
            key = (namespace, start_position, tuple(tokens[:length]))
            entry = self._entries.get(key)
            if entry is not None:
                entry[0] = next(self._clock)
                return PrefixMatch(key[2], _cut(entry[1], length))
        return None


class PrefillResult(NamedTuple):
    logits: torch.Tensor
    logit_start: int
    reused_tokens: int
    past_key_values: tuple
    cache_lengths: torch.Tensor
    cache_start_positions: torch.Tensor


class PrefixCachedRunner:
    def __init__(self, model, cache, namespace):
        self.model, self.cache, self.namespace = model, cache, namespace

    def prefill(self, input_ids, positions):
        tokens = input_ids[0].tolist()
        start = int(positions[0, 0])
        block = self.cache.block_size
        cap = block * ((len(tokens) - 1) // block)
        match = self.cache.lookup_longest(self.namespace, tokens, start, max_length=cap)
        reused = 0 if match is None else match.prefix_length
        cache = {}
        if reused:
            cache = dict(
                past_key_values=match.past_key_values,
                cache_lengths=torch.tensor([reused], device=input_ids.device),
                cache_start_positions=torch.tensor([start], device=input_ids.device),
            )
        out = self.model(input_ids[:, reused:], positions[:, reused:], use_cache=True, **cache)
        self.cache.store(self.namespace, tokens, out.past_key_values, start)
        return PrefillResult(
            out.logits,
            reused,
            reused,
            out.past_key_values,
            out.cache_lengths,
            out.cache_start_positions,
        )
