"""Exact-prefix K/V snapshots at block boundaries, with entry-level LRU.

`store` publishes, for every block boundary L = B, 2B, ... <= T, a snapshot of
the K/V through token L keyed `(namespace, start_position, tokens[:L])`.
`lookup_longest` rounds the reusable length down to a boundary and walks
toward zero until a key exists. Each entry is a full-prefix snapshot, so entry
2B repeats entry B's K/V: simple and self-contained, but it costs memory
(`kv_bytes`, `stored_tokens`); see the README for the chained-block layout
production systems use instead.

Ownership: the cache clones on the way in and on the way out, so neither the
caller's source tensors nor a returned match alias a stored snapshot.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, fields

from torch import Tensor

from .keys import (
    PrefixCacheNamespace,
    PrefixKey,
    check_count,
    check_namespace,
    check_start,
    token_tuple,
)

LayerKV = tuple[Tensor, Tensor]
PastKeyValues = tuple[LayerKV, ...]


@dataclass(frozen=True)
class PrefixMatch:
    """A reusable prefix: its exact tokens and an independent copy of its K/V."""

    tokens: tuple[int, ...]
    past_key_values: PastKeyValues

    def __post_init__(self) -> None:
        if not isinstance(self.tokens, tuple):
            raise TypeError(f"tokens must be a tuple of ints, got {type(self.tokens).__name__}")
        token_tuple(self.tokens)
        check_past(self.past_key_values, len(self.tokens), exact=True)

    @property
    def prefix_length(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class PrefixCacheStats:
    """A snapshot of a cache's counters (lifetime) and holdings (now)."""

    hits: int  # lookups that returned a match
    misses: int  # lookups that returned None
    evictions: int  # entries dropped by the LRU (clear() is not an eviction)
    reused_tokens: int  # sum of prefix_length over hits
    entry_count: int
    stored_tokens: int  # sum of every entry's prefix length (duplicates counted)
    kv_bytes: int  # bytes of K/V the entries hold

    def __post_init__(self) -> None:
        for field in fields(self):
            check_count(getattr(self, field.name), field.name, minimum=0)

    @property
    def lookups(self) -> int:
        return self.hits + self.misses

    @property
    def hit_rate(self) -> float:
        return self.hits / self.lookups if self.lookups else 0.0


def clone_past(past_key_values: Sequence[Sequence[Tensor]], length: int) -> PastKeyValues:
    """New tensors holding each layer's K/V through ``length`` tokens."""
    return tuple(
        (key[:, :, :length].clone(), value[:, :, :length].clone()) for key, value in past_key_values
    )


def past_bytes(past_key_values: PastKeyValues) -> int:
    return sum(t.numel() * t.element_size() for layer in past_key_values for t in layer)


def check_past(
    past_key_values: object, token_count: int, *, exact: bool = False
) -> Sequence[Sequence[Tensor]]:
    """One (key, value) pair per layer, each ``[1, H_kv, S, D]`` with S >= the tokens
    (S == the tokens when ``exact``), floating, all of one dtype and device."""
    if not isinstance(past_key_values, tuple | list):
        raise TypeError(
            "past_key_values must be a tuple of (key, value) pairs, "
            f"got {type(past_key_values).__name__}"
        )
    if not past_key_values:
        raise ValueError("past_key_values must hold at least one (key, value) pair")
    first: Tensor | None = None
    for index, layer in enumerate(past_key_values):
        if not isinstance(layer, tuple | list):
            raise TypeError(f"past_key_values[{index}] is not a (key, value) pair")
        if len(layer) != 2:
            raise ValueError(f"past_key_values[{index}] has {len(layer)} items, not (key, value)")
        for name, tensor in zip(("key", "value"), layer, strict=True):
            where = f"past_key_values[{index}].{name}"
            if not isinstance(tensor, Tensor):
                raise TypeError(f"{where} must be a tensor, got {type(tensor).__name__}")
            first = tensor if first is None else first
            _check_entry_tensor(where, tensor, first, token_count, exact)
            # One shape for every key and value of every layer (heads, slots, head size):
            # a snapshot the model cannot take back is refused when stored, not when hit.
            if tensor.shape != first.shape:
                raise ValueError(
                    f"{where} has shape {list(tensor.shape)}, past_key_values[0].key "
                    f"{list(first.shape)}: every key and value must share one shape"
                )
    return past_key_values


def _check_entry_tensor(
    where: str, tensor: Tensor, first: Tensor, token_count: int, exact: bool
) -> None:
    if tensor.dim() != 4:
        raise ValueError(f"{where} must be a [1, H_kv, S, D] tensor, got {list(tensor.shape)}")
    if tensor.shape[0] != 1:
        raise ValueError(f"{where} has batch {tensor.shape[0]}; entries need batch 1")
    slots = tensor.shape[2]
    if slots < token_count:
        raise ValueError(
            f"{where} holds {slots} positions, fewer than the {token_count} tokens stored"
        )
    if exact and slots != token_count:
        raise ValueError(f"{where} holds {slots} positions, not exactly the {token_count} tokens")
    if not tensor.dtype.is_floating_point:
        raise ValueError(f"{where} must be floating, got {tensor.dtype}")
    if tensor.device.type == "meta":
        raise ValueError(f"{where} is a meta tensor: it holds no K/V")
    if (tensor.dtype, tensor.device) != (first.dtype, first.device):
        raise ValueError(
            f"{where} is {tensor.dtype} on {tensor.device}, "
            f"past_key_values[0].key is {first.dtype} on {first.device}"
        )


class PrefixCache:
    """Block-aligned exact-prefix snapshots; capacity counts entries (LRU)."""

    def __init__(self, block_size: int, max_entries: int) -> None:
        self.block_size = check_count(block_size, "block_size", minimum=1)
        self.max_entries = check_count(max_entries, "max_entries", minimum=1)
        # Oldest first: a hit or a store moves its key to the end.
        self._entries: OrderedDict[PrefixKey, PastKeyValues] = OrderedDict()
        self._kv_bytes = 0
        self._stored_tokens = 0
        self._hits = 0
        self._misses = 0
        self._evictions = 0
        self._reused_tokens = 0

    @property
    def entry_count(self) -> int:
        return len(self._entries)

    @property
    def kv_bytes(self) -> int:
        return self._kv_bytes

    @property
    def stats(self) -> PrefixCacheStats:
        return PrefixCacheStats(
            hits=self._hits,
            misses=self._misses,
            evictions=self._evictions,
            reused_tokens=self._reused_tokens,
            entry_count=self.entry_count,
            stored_tokens=self._stored_tokens,
            kv_bytes=self._kv_bytes,
        )

    def store(
        self,
        namespace: PrefixCacheNamespace,
        tokens: Tensor | Sequence[int],
        past_key_values: PastKeyValues,
        start_position: int = 0,
    ) -> None:
        """Publish a snapshot at every block boundary of ``tokens`` (a partial tail is skipped)."""
        namespace = check_namespace(namespace)
        ids = token_tuple(tokens)
        start_position = check_start(start_position, len(ids))
        past = check_past(past_key_values, len(ids))
        for length in range(self.block_size, len(ids) + 1, self.block_size):
            key = self._key(namespace, start_position, ids[:length])
            if key in self._entries:
                # Same model, origin and tokens: the snapshot already held is the same K/V.
                self._entries.move_to_end(key)
            else:
                self._insert(key, clone_past(past, length))

    def lookup_longest(
        self,
        namespace: PrefixCacheNamespace,
        tokens: Tensor | Sequence[int],
        start_position: int = 0,
        max_length: int | None = None,
    ) -> PrefixMatch | None:
        """The longest stored block-aligned prefix of ``tokens`` (at most ``max_length``)."""
        found = self._longest(namespace, tokens, start_position, max_length)
        self._record(found)
        return self._match(found)

    def clear(self) -> None:
        """Drop every entry (the lifetime counters keep counting)."""
        self._entries.clear()
        self._kv_bytes = 0
        self._stored_tokens = 0

    # ---- lookup in three steps, so a caller can commit only after its own work succeeded --

    def _longest(
        self,
        namespace: PrefixCacheNamespace,
        tokens: Tensor | Sequence[int],
        start_position: int = 0,
        max_length: int | None = None,
    ) -> PrefixKey | None:
        """The key of the longest stored prefix, or None: validates, changes nothing."""
        namespace = check_namespace(namespace)
        ids = token_tuple(tokens)
        start_position = check_start(start_position, len(ids))
        limit = len(ids)
        if max_length is not None:
            limit = min(limit, check_count(max_length, "max_length", minimum=0))
        longest = limit - limit % self.block_size  # only block boundaries have entries
        for length in range(longest, 0, -self.block_size):
            key = self._key(namespace, start_position, ids[:length])
            if key in self._entries:
                return key
        return None

    def _record(self, found: PrefixKey | None) -> None:
        """Count a lookup's outcome; a hit becomes the most recent entry."""
        if found is None:
            self._misses += 1
            return
        self._entries.move_to_end(found)
        self._hits += 1
        self._reused_tokens += len(found[2])

    def _match(self, found: PrefixKey | None) -> PrefixMatch | None:
        """An independent copy of a found entry (no counters, no recency)."""
        if found is None:
            return None
        length = len(found[2])
        return PrefixMatch(found[2], clone_past(self._entries[found], length))

    @staticmethod
    def _key(
        namespace: PrefixCacheNamespace, start_position: int, prefix: tuple[int, ...]
    ) -> PrefixKey:
        """The key formula, once: (namespace, absolute start position, exact prefix tokens)."""
        return (namespace, start_position, prefix)

    def _insert(self, key: PrefixKey, snapshot: PastKeyValues) -> None:
        self._entries[key] = snapshot
        self._account(snapshot, +1)
        while len(self._entries) > self.max_entries:
            _, oldest = self._entries.popitem(last=False)
            self._account(oldest, -1)
            self._evictions += 1

    def _account(self, snapshot: PastKeyValues, sign: int) -> None:
        self._kv_bytes += sign * past_bytes(snapshot)
        self._stored_tokens += sign * snapshot[0][0].shape[2]
