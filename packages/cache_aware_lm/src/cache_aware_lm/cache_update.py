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
