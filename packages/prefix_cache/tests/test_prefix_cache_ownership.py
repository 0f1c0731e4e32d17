"""Ownership: neither the source K/V nor a returned match can change a stored snapshot."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import (
    assert_no_shared_storage,
    assert_past_close,
    candidate,
    clone_past,
    test_device,
)
from gptlab_testkit.models import cache_aware_modules

pc = candidate("PREFIX_CACHE_MODULE")
NS = pc.PrefixCacheNamespace("model-a", "cache-0")

pytestmark = [pytest.mark.contract, pytest.mark.owner("snapshot_ownership")]

PROMPT = (3, 1, 4, 1, 5, 9, 2, 6)


def poison(past):
    # Inside inference mode: a candidate may return inference tensors (docs/contracts.md).
    with torch.inference_mode():
        for key, value in past:
            key.fill_(float("nan"))
            value.fill_(-1e9)


def stored_cache(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=8)
    source = make_past(PROMPT)
    cache.store(NS, PROMPT, source)
    return cache, source


def test_writing_the_source_after_store_leaves_snapshots_intact(make_past):
    cache, source = stored_cache(make_past)
    poison(source)
    for length in (4, 8):
        match = cache.lookup_longest(NS, PROMPT, max_length=length)
        assert match is not None
        assert_past_close(match.past_key_values, make_past(PROMPT[:length]), "snapshot")


@pytest.mark.parametrize("length", [4, 8], ids=["shorter entry", "longest entry"])
def test_writing_a_returned_match_leaves_the_snapshot_intact(make_past, length):
    cache, _ = stored_cache(make_past)
    first = cache.lookup_longest(NS, PROMPT, max_length=length)
    assert first is not None
    poison(first.past_key_values)
    second = cache.lookup_longest(NS, PROMPT, max_length=length)
    assert second is not None
    assert_past_close(second.past_key_values, make_past(PROMPT[:length]), "snapshot after write")


def test_writing_a_shorter_match_leaves_longer_snapshots_intact(make_past):
    cache, _ = stored_cache(make_past)
    short = cache.lookup_longest(NS, PROMPT, max_length=4)
    assert short is not None
    poison(short.past_key_values)
    longer = cache.lookup_longest(NS, PROMPT)
    assert longer is not None
    assert_past_close(longer.past_key_values, make_past(PROMPT), "longer snapshot")


@pytest.mark.parametrize("length", [4, 8], ids=["shorter entry", "longest entry"])
def test_two_matches_share_no_storage(make_past, length):
    cache, source = stored_cache(make_past)
    first = cache.lookup_longest(NS, PROMPT, max_length=length)
    second = cache.lookup_longest(NS, PROMPT, max_length=length)
    assert first is not None and second is not None
    assert_no_shared_storage(first.past_key_values, second.past_key_values, "two matches")
    assert_no_shared_storage(first.past_key_values, source, "match and source")


MODULES = cache_aware_modules()


@pytest.mark.parametrize("variant", list(MODULES))
def test_writing_a_prefill_result_leaves_the_published_snapshots_intact(variant):
    model = MODULES[variant].make_test_model().to(test_device())
    runner = pc.PrefixCachedRunner(model, pc.PrefixCache(4, max_entries=8), NS)
    input_ids = torch.tensor([list(PROMPT)], device=test_device())
    positions = torch.arange(1, 1 + len(PROMPT), device=test_device()).unsqueeze(0)
    result = runner.prefill(input_ids, positions)
    expected = clone_past(result.past_key_values)
    poison(result.past_key_values)  # the request now owns and overwrites its K/V
    match = runner.cache.lookup_longest(NS, PROMPT, start_position=1)
    assert match is not None
    assert_past_close(match.past_key_values, expected, "published snapshot")
