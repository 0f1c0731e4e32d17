"""Fixtures for the kv_cache suite (pytest loads this; tests never import it)."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from gptlab_testkit import PastKeyValues, candidate, test_device

kvc = candidate("KV_CACHE_MODULE")


class RequestGeometry:
    """One request geometry: ``layers`` layers of ``[batch, heads, slots, head_dim]`` K/V.

    ``kv.cache(capacity, starts)`` builds the candidate's KVCache of this geometry,
    ``kv.random(tokens, seed)`` seeded K/V to write into it, ``kv.long(rows)`` positions.
    """

    layers, batch, heads, head_dim = 2, 2, 3, 4

    def shape(self, slots: int) -> tuple[int, int, int, int]:
        """``[B, H, slots, D]``: one layer's key (or value) over ``slots`` slots."""
        return (self.batch, self.heads, slots, self.head_dim)

    def random(self, tokens: int, seed: int) -> PastKeyValues:
        """Seeded random K/V ``[B, H, tokens, D]`` for every layer."""
        return tuple(
            (self._randn(tokens, seed + 2 * i), self._randn(tokens, seed + 2 * i + 1))
            for i in range(self.layers)
        )

    def cache(self, capacity: int, starts: list[int] | None = None):
        """An empty candidate KVCache of ``capacity`` slots (row starts default to zero)."""
        return kvc.KVCache(
            self.layers,
            self.batch,
            self.heads,
            capacity,
            self.head_dim,
            device=test_device(),
            start_positions=None if starts is None else self.long(starts),
        )

    def _randn(self, tokens: int, seed: int) -> Tensor:
        generator = torch.Generator().manual_seed(seed)
        return torch.randn(*self.shape(tokens), generator=generator).to(test_device())

    @staticmethod
    def long(rows: list[list[int]] | list[int]) -> Tensor:
        return torch.tensor(rows, dtype=torch.long, device=test_device())


@pytest.fixture(scope="session")
def kv() -> RequestGeometry:
    """The request geometry and K/V the storage and lifecycle tests share."""
    return RequestGeometry()
