"""Seeding request storage from a prefix-cache match.

Request A publishes its prompt's K/V to a PrefixCache; request B shares A's
first 8 tokens at the same origin, looks them up, seeds a larger KVCache with
`KVCache.from_past_key_values(match.past_key_values, ...)` and continues at its
first uncached absolute position. The oracle is B's full recomputation.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.kv_storage import new_token_kv
from gptlab_testkit.models import cache_aware_modules

kvc = candidate("KV_CACHE_MODULE")
pc = candidate("PREFIX_CACHE_MODULE")
MODULES = cache_aware_modules()

pytestmark = pytest.mark.contract

START, BLOCK, SHARED, TAIL, CAPACITY = 3, 4, 8, 3, 16


@pytest.fixture(scope="module", params=list(MODULES), ids=list(MODULES))
def model(request):
    return MODULES[request.param].make_test_model().to(test_device())


def run(model, ids, positions, past=None, lengths=None, starts=None):
    with torch.no_grad():
        return model(ids, positions, past_key_values=past, cache_lengths=lengths,
                     cache_start_positions=starts, use_cache=True)  # fmt: skip


def positions(length: int) -> torch.Tensor:
    return torch.arange(START, START + length, device=test_device())[None, :]


@pytest.fixture(scope="module")
def request_b(model):
    """(B's prefix match, B's tail ids, B's full output) after A published its prompt."""
    generator = torch.Generator().manual_seed(5)
    prompt_a = torch.randint(0, 16, (1, SHARED + 2), generator=generator).to(test_device())
    tail_b = torch.randint(0, 16, (1, TAIL), generator=generator).to(test_device())
    prompt_b = torch.cat([prompt_a[:, :SHARED], tail_b], dim=1)
    namespace = pc.PrefixCacheNamespace("kv-cache-suite", "seed")
    prefix_cache = pc.PrefixCache(block_size=BLOCK, max_entries=4)
    published = run(model, prompt_a, positions(prompt_a.shape[1]))
    prefix_cache.store(namespace, prompt_a, published.past_key_values, start_position=START)

    match = prefix_cache.lookup_longest(namespace, prompt_b, start_position=START)

    assert match is not None and match.prefix_length == SHARED, "no 8-token prefix-cache hit"
    return match, tail_b, run(model, prompt_b, positions(SHARED + TAIL))


def seeded_cache(match):
    return kvc.KVCache.from_past_key_values(
        match.past_key_values,
        torch.tensor([SHARED], device=test_device()),
        torch.tensor([START], device=test_device()),
        capacity=CAPACITY,
    )


@pytest.mark.owner("storage_lifecycle")
def test_seeded_cache_continues_at_the_first_uncached_absolute_position(model, request_b):
    match, tail_b, full = request_b
    cache = seeded_cache(match)

    assert cache.cache_lengths.tolist() == [SHARED]
    assert cache.cache_start_positions.tolist() == [START]
    assert cache.storage[0][0].shape[2] == CAPACITY
    past, lengths, starts = cache.model_inputs()
    suffix = run(model, tail_b, positions(SHARED + TAIL)[:, SHARED:], past, lengths, starts)
    assert_close(suffix.logits, full.logits[:, SHARED:], "suffix logits after seeding")


@pytest.mark.owner("fixed_capacity_storage")
def test_seeded_cache_holds_the_full_prompt_after_appending_the_suffix(model, request_b):
    match, tail_b, full = request_b
    cache = seeded_cache(match)
    suffix_positions = positions(SHARED + TAIL)[:, SHARED:]
    suffix = run(model, tail_b, suffix_positions, *cache.model_inputs())

    cache.append(new_token_kv(suffix.past_key_values, [SHARED], TAIL), suffix_positions)

    assert cache.cache_lengths.tolist() == [SHARED + TAIL]
    for index, ((key, value), (want_key, want_value)) in enumerate(
        zip(cache.snapshot(), full.past_key_values, strict=True)
    ):
        assert_close(key, want_key, f"layer {index} key")
        assert_close(value, want_value, f"layer {index} value")
