"""Fixtures for the cache_aware_lm suite (pytest loads this; tests never import it).

Each test module parametrizes itself over ``gptlab_testkit.models.cache_aware_modules()``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
import torch
from torch import Tensor

from gptlab_testkit import PastKeyValues, test_device

PaddedCache = tuple[PastKeyValues, Tensor, Tensor]  # (past, lengths, starts)
PaddedCacheBuilder = Callable[..., PaddedCache]


def _build_padded_cache(
    model: Callable[..., object],
    prefixes: Sequence[Sequence[int]],
    starts: Sequence[int],
    extra_slots: int = 2,
    poison: float = 1e30,
) -> PaddedCache:
    """Each row's prefix computed alone at its origin, stacked into one padded cache.

    Row b's valid K/V fill slots 0..len-1; every other slot (up to the longest
    prefix plus ``extra_slots``) holds ``poison``.
    """
    device = test_device()
    row_caches = []
    for tokens, start in zip(prefixes, starts, strict=True):
        if not tokens:
            row_caches.append(None)
            continue
        ids = torch.tensor([list(tokens)], device=device)
        positions = start + torch.arange(len(tokens), device=device)[None]
        out = model(ids, positions, use_cache=True)
        row_caches.append(out.past_key_values)  # type: ignore[attr-defined]
    template = next(cache for cache in row_caches if cache is not None)
    storage = max(len(tokens) for tokens in prefixes) + extra_slots
    past = []
    for layer_index, (key0, _) in enumerate(template):
        _, H, _, D = key0.shape
        layer = []
        for kind in (0, 1):
            full = torch.full((len(prefixes), H, storage, D), poison, device=device)
            for row, cache in enumerate(row_caches):
                if cache is not None:
                    tensor = cache[layer_index][kind]
                    full[row, :, : tensor.shape[2]] = tensor[0]
            layer.append(full)
        past.append((layer[0], layer[1]))
    lengths = torch.tensor([len(tokens) for tokens in prefixes], device=device)
    return tuple(past), lengths, torch.tensor(list(starts), device=device)


@pytest.fixture
def padded_cache() -> PaddedCacheBuilder:
    """``padded_cache(model, prefixes, starts, extra_slots=2, poison=1e30)``."""
    return _build_padded_cache
