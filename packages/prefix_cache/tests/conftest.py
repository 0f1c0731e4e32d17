"""Fixtures for the prefix_cache suite (tests use them by name; never import this file)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
import torch
from torch import Tensor

from gptlab_testkit import PastKeyValues, test_device

LAYERS, KV_HEADS, HEAD_DIM = 2, 2, 3


def synthetic_past(tokens: Sequence[int], start: int = 0, batch: int = 1) -> PastKeyValues:
    """K/V whose every slot encodes (layer, head, token id, absolute position, dim).

    Entries are compared by value, so a lookup that returned the wrong prompt,
    the wrong origin or the wrong length shows up as different numbers.
    """
    T = len(tokens)
    ids = torch.tensor(list(tokens), dtype=torch.float32).reshape(1, 1, T, 1)
    positions = torch.arange(start, start + T, dtype=torch.float32).reshape(1, 1, T, 1)
    heads = torch.arange(KV_HEADS, dtype=torch.float32).reshape(1, KV_HEADS, 1, 1)
    dims = torch.arange(HEAD_DIM, dtype=torch.float32).reshape(1, 1, 1, HEAD_DIM)
    past = []
    for layer in range(LAYERS):
        key = 1000 * ids + positions + 0.25 * heads + 0.01 * dims + 100_000 * layer
        key = key.expand(batch, KV_HEADS, T, HEAD_DIM).contiguous().to(test_device())
        past.append((key, -key.clone()))
    return tuple(past)


@pytest.fixture
def make_past() -> Callable[..., PastKeyValues]:
    return synthetic_past


@pytest.fixture
def as_tensor() -> Callable[[Sequence[int]], Tensor]:
    """A prompt as the [1, T] long tensor form the contract also accepts."""
    return lambda tokens: torch.tensor([list(tokens)], dtype=torch.long, device=test_device())
