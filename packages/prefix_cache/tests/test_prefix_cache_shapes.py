"""Extension: a snapshot the model could not take back is refused when stored, not when hit.

``store`` checks every layer's key and value against each other and against the
first layer's key (heads, slots, head size), so a later hit always returns K/V of
one shape; a runner over a model on ``meta`` names the model as the problem. Each
bad pair sits in a layer other than the first; a rejected store leaves the cache
(entries, order, counters) bit-for-bit as it was.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate, test_device
from gptlab_testkit.boundary import assert_rejected_unchanged
from gptlab_testkit.models import cache_aware_modules

pc = candidate("PREFIX_CACHE_MODULE")

pytestmark = [pytest.mark.owner("prefix_cache_validation"), pytest.mark.extension]

NS = pc.PrefixCacheNamespace("model-a", "cache-0")
LAYERS, HEADS, SLOTS, HEAD_DIM = 3, 2, 8, 4
TOKENS = list(range(8))


def kv(heads: int = HEADS, slots: int = SLOTS, head_dim: int = HEAD_DIM) -> torch.Tensor:
    return torch.ones(1, heads, slots, head_dim, device=test_device())


def past(layer: int = 1, *, key: torch.Tensor | None = None, value: torch.Tensor | None = None):
    """Three valid layers, with ``key`` / ``value`` replaced in ``layer``."""
    layers = [(kv(), kv()) for _ in range(LAYERS)]
    old_key, old_value = layers[layer]
    layers[layer] = (old_key if key is None else key, old_value if value is None else value)
    return tuple(layers)


BAD_PASTS = {
    "value heads differ from the key's": past(value=kv(heads=1)),
    "value head size differs from the key's": past(value=kv(head_dim=3)),
    "value slots differ from the key's": past(value=kv(slots=9)),
    "a later layer has other heads": past(2, key=kv(heads=1), value=kv(heads=1)),
    "a later layer has another head size": past(2, key=kv(head_dim=5), value=kv(head_dim=5)),
    "a later layer has more slots": past(1, key=kv(slots=9), value=kv(slots=9)),
}


@pytest.fixture
def filled():
    cache = pc.PrefixCache(4, 8)
    cache.store(NS, [9, 9, 9, 9], past())
    return cache


@pytest.mark.parametrize("case", list(BAD_PASTS))
def test_store_refuses_layers_of_different_shapes(filled, case):
    assert_rejected_unchanged(
        filled,
        lambda: filled.store(NS, TOKENS, BAD_PASTS[case]),
        ValueError,
        "past_key_values",
    )


def test_store_accepts_one_shape_everywhere(filled):
    filled.store(NS, TOKENS, past())
    match = filled.lookup_longest(NS, TOKENS)
    assert match is not None and match.prefix_length == 8


@pytest.mark.parametrize("module_id", list(cache_aware_modules()))
def test_a_runner_over_a_model_on_meta_names_the_model(module_id):
    meta = cache_aware_modules()[module_id].make_test_model().to("meta")
    cache = pc.PrefixCache(4, 8)
    ids = torch.tensor([[1, 2, 3, 4, 5]], device=test_device())
    positions = torch.arange(5, device=test_device())[None]

    def prefill() -> None:  # refused at construction or at the prefill: either is fine
        pc.PrefixCachedRunner(meta, cache, NS).prefill(ids, positions)

    with pytest.raises(ValueError, match=r"\bmodel\b.*meta|meta.*\bmodel\b") as raised:
        prefill()
    assert "is on cpu" not in str(raised.value)
    assert cache.entry_count == 0
