"""Checks of a paged forward call (model, cache geometry, tokens), before anything is reserved.

``paged_forward`` and ``paged_forward_fast`` run a model over a cache: a cache built
for another model (other layer count, K/V heads, head size, dtype or device) or
tokens of the wrong kind would otherwise fail inside the model call, after blocks
were reserved. What the model states about itself (``geometry``, as this
project's models do) is compared with the cache; a model without it is checked
only for being callable (any other mismatch is then the model's own error, raised
before the cache changes).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from arg_checks import check_tensor
from cache_aware_lm import ModelGeometry

if TYPE_CHECKING:
    from .cache import PagedKVCache


def model_geometry(model: object, *, servable: bool) -> ModelGeometry | None:
    """The geometry a model states (required with ``servable``), after checking it is a model."""
    if not callable(model):
        raise ValueError(f"model must be a callable cache-aware model, got {type(model).__name__}")
    geometry = getattr(model, "geometry", None)
    if servable and not (
        callable(getattr(model, "run_blocks", None))
        and callable(getattr(model, "lm_head", None))
        and isinstance(geometry, ModelGeometry)
    ):
        raise ValueError(
            "model must offer the serving seam (run_blocks, lm_head, geometry) for the "
            f"fast path, got {type(model).__name__}"
        )
    return geometry if isinstance(geometry, ModelGeometry) else None


def check_model_fits_cache(geometry: ModelGeometry, cache: PagedKVCache) -> None:
    """The cache holds K/V of exactly this model's shape, dtype and device."""
    if geometry.device.type == "meta":
        raise ValueError("model is on device meta: it has no weights to run")
    key = cache.storage[0][0]
    pairs = (
        ("layer count", geometry.n_layers, cache.layer_count),
        ("K/V head count", geometry.n_kv_heads, key.shape[1]),
        ("head dim", geometry.head_dim, key.shape[3]),
        ("dtype", geometry.dtype, cache.dtype),
        ("device", geometry.device, cache.device),
    )
    for what, model_value, cache_value in pairs:
        if model_value != cache_value:
            raise ValueError(f"cache {what} {cache_value} does not match the model's {model_value}")


def check_call(
    model: object,
    cache: PagedKVCache,
    request_ids: Sequence[Hashable],
    input_ids: object,
    positions: object,
    *,
    servable: bool,
) -> tuple[Tensor, Tensor]:
    """Everything a paged forward can check before the pool changes."""
    geometry = model_geometry(model, servable=servable)
    if geometry is not None:
        check_model_fits_cache(geometry, cache)
    rows = len(cache._tables_of(request_ids))  # open, distinct ids (read only)
    ids = check_tensor(
        "input_ids", input_ids, shape=(rows, None), dtype=torch.long, device=cache.device
    )
    if ids.shape[1] == 0:
        raise ValueError("input_ids must hold at least one token per row")
    where = check_tensor(
        "positions", positions, shape=tuple(ids.shape), dtype=torch.long, device=cache.device
    )
    if geometry is not None:
        if bool(((ids < 0) | (ids >= geometry.vocab_size)).any()):
            raise ValueError(f"input_ids must lie in [0, vocab_size={geometry.vocab_size})")
        if bool((where >= geometry.context_length).any()):
            raise ValueError(
                f"positions must lie below the model's context length {geometry.context_length}"
            )
    return ids, where
