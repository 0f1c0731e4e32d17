"""Where each layer's new keys and values go: the cache writer.

A forward hands every attention layer a ``CacheWriter``. The layer computes its
new K/V, asks the writer for the keys and values to attend over, and never
touches cache storage itself. ``FunctionalCacheWriter`` (this module) builds new
tensors from the caller's cache and leaves it unwritten; a serving path can
supply a writer that stores K/V in place in request-owned storage instead.

Slot rule (both writers): row b's token at absolute position p sits in slot
``p - start[b]``, so the T new tokens of row b land in slots
``len[b] .. len[b] + T - 1``, right after that row's own valid prefix.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor

from tinygpt import ArgumentTypeError

from .output import LayerKV, PastKeyValues


class CacheWriter(Protocol):
    """Stores one layer's new K/V and returns the full keys/values to attend over.

    ``key_new`` / ``value_new`` are ``[B, H_kv, T, D]``; the returned pair is
    ``[B, H_kv, S, D]`` whose slots line up with the forward's attention mask.
    """

    @property
    def storage_length(self) -> int: ...

    def write(self, layer_index: int, key_new: Tensor, value_new: Tensor) -> LayerKV: ...


class FunctionalCacheWriter:
    """Returns new tensors ``[B, H_kv, max(len + T), D]``; the caller's cache is only read.

    Slots a row does not fill are zeros, so padding from the caller's cache (which
    may hold anything, even huge values) never reaches attention or the output.
    The slot geometry is computed once per forward and shared by every layer.
    """

    def __init__(self, past: PastKeyValues | None, cache_lengths: Tensor, new_tokens: int) -> None:
        check_writer_arguments(
            past, "past", cache_lengths, "cache_lengths", new_tokens, "new_tokens"
        )
        device = cache_lengths.device
        self._past = past
        self._storage_length = int((cache_lengths + new_tokens).max())
        # Past slots worth copying: those inside the new storage and below the row's length.
        past_slots = 0 if past is None else min(past[0][0].shape[2], self._storage_length)
        slot = torch.arange(past_slots, device=device)
        self._past_slots = past_slots
        self._past_valid = (slot[None, :] < cache_lengths[:, None])[:, None, :, None]  # [B,1,S,1]
        offsets = torch.arange(new_tokens, device=device)
        self._write_slots = cache_lengths[:, None] + offsets[None, :]  # [B, T]

    @property
    def storage_length(self) -> int:
        return self._storage_length

    def write(self, layer_index: int, key_new: Tensor, value_new: Tensor) -> LayerKV:
        past = None if self._past is None else self._past[layer_index]
        keys = self._extend(None if past is None else past[0], key_new)
        values = self._extend(None if past is None else past[1], value_new)
        return keys, values

    def _extend(self, past: Tensor | None, new: Tensor) -> Tensor:
        B, H, T, D = new.shape
        out = new.new_zeros(B, H, self._storage_length, D)
        if past is not None and self._past_slots > 0:
            kept = past[:, :, : self._past_slots]
            # where, not multiply: 0 * inf would still be nan.
            out[:, :, : self._past_slots] = torch.where(self._past_valid, kept, 0.0)
        index = self._write_slots[:, None, :, None].expand(B, H, T, D)
        return out.scatter(2, index, new)


def check_writer_arguments(
    layers: object, layers_name: str, rows: object, rows_name: str, count: object, count_name: str
) -> None:
    """A writer's arguments by kind and shape (no device reads: writers are built per step).

    ``layers``: None or a sequence of (key, value) 4-d tensors of one batch B; ``rows``:
    a long tensor with B rows on their device; ``count``: a positive int.
    """
    if isinstance(count, bool) or not isinstance(count, int):
        raise ArgumentTypeError(f"{count_name} must be an int, got {count!r}")
    if count < 1:
        raise ValueError(f"{count_name} must be >= 1, got {count}")
    if not isinstance(rows, Tensor):
        raise ArgumentTypeError(f"{rows_name} must be a long Tensor, got {type(rows).__name__}")
    if rows.dtype != torch.long or rows.dim() < 1:
        raise ValueError(
            f"{rows_name} must be a long tensor [B, ...], got {rows.dtype} {tuple(rows.shape)}"
        )
    if layers is None:
        return
    if not isinstance(layers, tuple | list) or not layers:
        raise ArgumentTypeError(f"{layers_name} must be a sequence of (key, value) pairs")
    for index, pair in enumerate(layers):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise ArgumentTypeError(f"{layers_name}[{index}] must be a (key, value) pair")
        for kind, tensor in zip(("key", "value"), pair, strict=True):
            if not isinstance(tensor, Tensor):
                raise ArgumentTypeError(f"{layers_name}[{index}] {kind} must be a Tensor")
            if tensor.dim() != 4 or tensor.shape[0] != rows.shape[0]:
                raise ValueError(
                    f"{layers_name}[{index}] {kind} must be [B={rows.shape[0]}, H_kv, S, D], "
                    f"got {tuple(tensor.shape)}"
                )
            if tensor.device != rows.device:
                raise ValueError(
                    f"{layers_name}[{index}] {kind} is on {tensor.device}, "
                    f"{rows_name} on {rows.device}"
                )
