"""KVCache: one request's fixed-capacity K/V storage.

Every layer's key and value are preallocated once as `[B, H_kv, capacity, D]`.
Row b holds `length[b]` valid tokens in slots `0..length[b]-1`, whose absolute
positions start at `start[b]`; a token at absolute position p lives in

    slot[b, t] = positions[b, t] - start[b]

Slots at or beyond a row's length are padding: zero after construction and
`load`, stale after `reset`, never visible as valid tokens. The cache owns the
storage and the metadata; callers get views (`model_inputs`) or clones
(`snapshot`, `cache_lengths`, `cache_start_positions`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Self

import torch
from torch import Tensor

from arg_checks import check_device, check_int, check_tensor

from .checks import (
    INT64_MAX,
    LayerKV,
    PastKeyValues,
    check_fits,
    check_layers,
    memory_span,
)
from .slots import write_slots

ModelInputs = tuple[PastKeyValues | None, Tensor | None, Tensor | None]


class KVCache:
    """Preallocated per-layer K/V plus per-row lengths and start positions."""

    def __init__(
        self,
        layer_count: int,
        batch_size: int,
        head_count: int,
        capacity: int,
        head_dim: int,
        *,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
        start_positions: Tensor | Sequence[int] | None = None,
    ) -> None:
        sizes = {
            "layer_count": layer_count,
            "batch_size": batch_size,
            "head_count": head_count,
            "capacity": capacity,
            "head_dim": head_dim,
        }
        for name, value in sizes.items():
            check_int(name, value, minimum=1)
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
        if not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating torch.dtype, got {dtype!r}")
        where = check_device("device", device)
        check_fits(sizes, dtype, where)
        # Starts are checked before anything is allocated.
        starts_B = start_positions_tensor(start_positions, batch_size, capacity, where)
        shape_BHSD = (batch_size, head_count, capacity, head_dim)
        self._storage: PastKeyValues = tuple(
            (
                torch.zeros(shape_BHSD, dtype=dtype, device=where),
                torch.zeros(shape_BHSD, dtype=dtype, device=where),
            )
            for _ in range(layer_count)
        )
        # The allocated device, normalised ("cuda" -> "cuda:0"), is what inputs must match.
        self._device = self._storage[0][0].device
        self._lengths_B = torch.zeros(batch_size, dtype=torch.long, device=self._device)
        self._starts_B = starts_B.to(self._device)
        # Host mirror of lengths.max(): capacity checks need no device sync.
        self._logical_length = 0
        # Byte ranges of the storage, sorted: new K/V must not alias them (metadata only).
        spans = sorted(memory_span(tensor) for pair in self._storage for tensor in pair)
        self._span_starts = [first for first, _ in spans]
        self._span_ends = [end for _, end in spans]

    @classmethod
    def from_past_key_values(
        cls,
        past_key_values: Sequence[LayerKV],
        cache_lengths: Tensor,
        cache_start_positions: Tensor,
        *,
        capacity: int | None = None,
    ) -> Self:
        """A cache sized from the first key `[B, H_kv, S, D]` (capacity S by default), loaded."""
        if not isinstance(past_key_values, Sequence) or isinstance(past_key_values, str | bytes):
            raise TypeError(
                "past_key_values must be a sequence of (key, value) pairs, "
                f"got {type(past_key_values).__name__}"
            )
        if len(past_key_values) == 0:
            raise ValueError("past_key_values must hold at least one (key, value) pair")
        check_layers("past_key_values", past_key_values, len(past_key_values))
        key = past_key_values[0][0]
        if not isinstance(key, Tensor):
            raise TypeError(f"past_key_values[0] key must be a tensor, got {type(key).__name__}")
        if key.dim() != 4 or min(key.shape[0], key.shape[1], key.shape[3]) < 1:
            raise ValueError(
                "past_key_values[0] key must be [B, H_kv, S, D] with B, H_kv, D >= 1, "
                f"got {list(key.shape)}"
            )
        if not key.dtype.is_floating_point:
            raise ValueError(f"past_key_values[0] key must be floating, got {key.dtype}")
        B, H, S, D = key.shape
        if key.device.type == "meta":
            raise ValueError("past_key_values[0] key is a meta tensor: it holds no data to load")
        if capacity is None and S == 0:
            raise ValueError("past_key_values hold no slots: pass a capacity >= 1")
        if capacity is not None:
            check_int("capacity", capacity, minimum=max(S, 1))
        cache = cls(
            len(past_key_values),
            B,
            H,
            S if capacity is None else capacity,
            D,
            dtype=key.dtype,
            device=key.device,
        )
        cache.load(past_key_values, cache_lengths, cache_start_positions)
        return cache

    # ---- read-only state -------------------------------------------------------------

    @property
    def storage(self) -> PastKeyValues:
        """The full-capacity `[B, H_kv, capacity, D]` tensors: the same objects for life."""
        return self._storage

    @property
    def cache_lengths(self) -> Tensor:
        return self._lengths_B.clone()

    @property
    def cache_start_positions(self) -> Tensor:
        return self._starts_B.clone()

    @property
    def logical_length(self) -> int:
        """The longest row's length: how far `model_inputs` and `snapshot` reach."""
        return self._logical_length

    @property
    def capacity(self) -> int:
        return self._storage[0][0].shape[2]

    @property
    def dtype(self) -> torch.dtype:
        return self._storage[0][0].dtype

    @property
    def device(self) -> torch.device:
        return self._device

    # ---- lifecycle -------------------------------------------------------------------

    def append(self, past_key_values: Sequence[LayerKV], positions: Tensor) -> None:
        """Write the new tokens' K/V (`[B, H_kv, T, D]` per layer) at their positions.

        `positions` `[B, T]` are absolute and must be each row's next T positions,
        `start[b] + length[b] + t`; they land in slot `positions - start` and every
        row's length grows by T. Everything is checked before the first write.
        """
        T = self._check_positions(positions)
        self._check_kv("past_key_values", past_key_values, tokens=T)
        slots_BT = positions - self._starts_B[:, None]
        for (key_cache, value_cache), (key_new, value_new) in zip(
            self._storage, past_key_values, strict=True
        ):
            write_slots(key_cache, value_cache, key_new, value_new, slots_BT)
        self._lengths_B += T
        self._logical_length += T

    def load(
        self,
        past_key_values: Sequence[LayerKV],
        cache_lengths: Tensor,
        cache_start_positions: Tensor,
    ) -> None:
        """Copy each row's valid prefix from a `[B, H_kv, S, D]` cache (S <= capacity).

        Every other slot is zeroed; lengths and starts are replaced.
        """
        S = self._check_kv("past_key_values", past_key_values, tokens=None)
        B = self._lengths_B.shape[0]
        lengths_B = check_tensor(
            "cache_lengths", cache_lengths, shape=(B,), dtype=torch.long, device=self._device
        )
        starts_B = check_tensor(
            "cache_start_positions",
            cache_start_positions,
            shape=(B,),
            dtype=torch.long,
            device=self._device,
        )
        # One host sync reads every value the checks need.
        shortest, longest, earliest_start, latest_start = torch.stack(
            (lengths_B.min(), lengths_B.max(), starts_B.min(), starts_B.max())
        ).tolist()
        if shortest < 0 or longest > S:
            raise ValueError(
                f"cache_lengths must lie in [0, {S}] (the given cache's length), "
                f"got {lengths_B.tolist()}"
            )
        check_start_range("cache_start_positions", earliest_start, latest_start, self.capacity)
        slot_S = torch.arange(S, device=self._device)
        padding_B1S1 = (slot_S[None, :] >= lengths_B[:, None])[:, None, :, None]
        for stored, given in zip(self._storage, past_key_values, strict=True):
            for stored_BHCD, given_BHSD in zip(stored, given, strict=True):
                # Copy the rectangle, then zero what is not a row's valid prefix:
                # padding in the source (even inf/nan) never reaches the storage.
                stored_BHCD[:, :, :S].copy_(given_BHSD).masked_fill_(padding_B1S1, 0)
                stored_BHCD[:, :, S:].zero_()
        self._lengths_B.copy_(lengths_B)
        self._starts_B.copy_(starts_B)
        self._logical_length = longest

    def model_inputs(self) -> ModelInputs:
        """(past_key_values, cache_lengths, cache_start_positions) for a cache-aware model.

        The K/V are views of the storage sliced to `logical_length` (the model never
        writes its inputs); `(None, None, None)` while every row is empty.
        """
        if self._logical_length == 0:
            return None, None, None
        L = self._logical_length
        past = tuple((key[:, :, :L], value[:, :, :L]) for key, value in self._storage)
        return past, self.cache_lengths, self.cache_start_positions

    def snapshot(self) -> PastKeyValues:
        """Cloned K/V sliced to `logical_length`: later writes cannot reach it."""
        L = self._logical_length
        return tuple(
            (key[:, :, :L].clone(), value[:, :, :L].clone()) for key, value in self._storage
        )

    def reset(self, start_positions: Tensor | Sequence[int] | None = None) -> None:
        """Empty every row and set new starts (zero by default); storage is kept, not cleared."""
        starts_B = self._start_positions(start_positions)
        self._lengths_B.zero_()
        self._starts_B.copy_(starts_B)
        self._logical_length = 0

    # ---- boundary checks -------------------------------------------------------------

    def _start_positions(self, start_positions: Tensor | Sequence[int] | None) -> Tensor:
        """A fresh long `[B]` tensor of valid starts on the cache's device."""
        B = self._lengths_B.shape[0]
        return start_positions_tensor(start_positions, B, self.capacity, self._device)

    def _check_kv(self, name: str, past_key_values: object, *, tokens: int | None) -> int:
        """Layers, pairs, shapes, dtype and device (metadata only); returns the shared S.

        `tokens` fixes S (append); None accepts any S up to the capacity (load).
        """
        key0 = self._storage[0][0]
        B, H, capacity, D = key0.shape
        layers = check_layers(name, past_key_values, len(self._storage))
        S = tokens
        for index, pair in enumerate(layers):
            for kind, tensor in zip(("key", "value"), pair, strict=True):
                what = f"{name}[{index}] {kind}"
                check_tensor(
                    what, tensor, shape=(B, H, S, D), dtype=key0.dtype, device=self._device
                )
                S = tensor.shape[2]
                self._check_not_storage(what, tensor)
        assert S is not None
        if capacity < S:
            raise ValueError(f"{name} holds {S} slots, more than the capacity {capacity}")
        return S

    def _check_not_storage(self, name: str, tensor: Tensor) -> None:
        """New K/V must not be (a view of) this cache's own storage: the write would read
        memory it is overwriting. One data pointer, no kernel: each storage tensor is its
        own allocation, so anything overlapping it is a view starting inside its span."""
        first = tensor.data_ptr()
        index = bisect_right(self._span_starts, first) - 1
        if index >= 0 and first < self._span_ends[index] and tensor.numel() > 0:
            raise ValueError(
                f"{name} shares memory with the cache's own storage; "
                "pass a copy (snapshot() returns one)"
            )

    def _check_positions(self, positions: object) -> int:
        """`positions` are each row's next T absolute positions and fit; returns T."""
        B = self._lengths_B.shape[0]
        check_tensor("positions", positions, shape=(B, None), dtype=torch.long, device=self._device)
        assert isinstance(positions, Tensor)
        T = positions.shape[1]
        if self._logical_length + T > self.capacity:
            raise ValueError(
                f"positions hold {T} new tokens per row: appended to a row holding "
                f"{self._logical_length} they exceed the capacity {self.capacity}"
            )
        # Row b must continue exactly where it stopped: no gap, no rewrite of a valid slot.
        next_B = self._starts_B + self._lengths_B
        expected_BT = next_B[:, None] + torch.arange(T, device=self._device)
        if not torch.equal(positions, expected_BT):
            raise ValueError(self._describe_bad_positions(positions, expected_BT))
        return T

    def _describe_bad_positions(self, positions: Tensor, expected_BT: Tensor) -> str:
        """The first wrong row, in words (the slow path: only on rejection)."""
        mismatched = (positions != expected_BT).any(dim=1)
        row = int(mismatched.nonzero()[0, 0])
        got, want = positions[row].tolist(), expected_BT[row].tolist()
        start = int(self._starts_B[row])
        if min(got) < start:
            return f"positions of row {row} {got} start before the row's start position {start}"
        return (
            f"positions of row {row} must be its next slots' positions {want} "
            f"(start {start} + length {int(self._lengths_B[row])} onward), got {got}"
        )


# ---- start positions ------------------------------------------------------------------


def start_positions_tensor(
    start_positions: object, batch_size: int, capacity: int, device: torch.device
) -> Tensor:
    """A fresh long `[B]` tensor of starts on `device` (zeros for None), checked.

    A start must be non-negative and leave room for `capacity` positions inside
    int64, so `start + slot` never wraps around.
    """
    name = "start_positions"
    if start_positions is None:
        return torch.zeros(batch_size, dtype=torch.long, device=device)
    if isinstance(start_positions, Tensor):
        starts_B = check_tensor(
            name, start_positions, shape=(batch_size,), dtype=torch.long, device=device
        ).clone()
        earliest, latest = torch.stack((starts_B.min(), starts_B.max())).tolist()
        check_start_range(name, earliest, latest, capacity)
        return starts_B
    if not isinstance(start_positions, Sequence) or isinstance(start_positions, str | bytes):
        raise TypeError(
            f"{name} must be a long tensor or a sequence of ints, "
            f"got {type(start_positions).__name__}"
        )
    values = list(start_positions)
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name}[{index}] must be an int, got {type(value).__name__}")
    if len(values) != batch_size:
        raise ValueError(f"{name} must hold {batch_size} starts, got {len(values)}")
    check_start_range(name, min(values), max(values), capacity)
    return torch.tensor(values, dtype=torch.long, device=device)


def check_start_range(name: str, earliest: int, latest: int, capacity: int) -> None:
    if earliest < 0:
        raise ValueError(f"{name} must be non-negative, got a start of {earliest}")
    if latest > INT64_MAX - capacity:
        raise ValueError(
            f"{name} must leave room for {capacity} positions below 2**63, got a start of {latest}"
        )
