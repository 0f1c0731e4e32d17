"""PrefixCachedRunner against full recomputation, on every cache-aware variant.

Prompts start at a nonzero absolute origin: a runner that ignores positions, or
a cache keyed without the origin, drifts from the full forward pass.
"""

from __future__ import annotations

from functools import cache

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_close, assert_past_close, candidate, test_device
from gptlab_testkit.models import cache_aware_modules

pc = candidate("PREFIX_CACHE_MODULE")
NS = pc.PrefixCacheNamespace("test-model", "runner")
MODULES = cache_aware_modules()

pytestmark = [pytest.mark.contract, pytest.mark.owner("prefix_runner")]

# The contract guarantees vocab >= 16 and context >= 16: ids < 16, origin + T <= 16.
ORIGIN = 2
PROMPT = (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8)


@cache
def model_for(variant):
    return MODULES[variant].make_test_model().to(test_device())


@pytest.fixture(params=list(MODULES))
def model(request):
    return model_for(request.param)


def prompt_tensors(tokens, origin=ORIGIN):
    input_ids = torch.tensor([list(tokens)], dtype=torch.long, device=test_device())
    positions = torch.arange(origin, origin + len(tokens), device=test_device()).unsqueeze(0)
    return input_ids, positions


def runner_for(model, block_size=3, namespace=NS):
    return pc.PrefixCachedRunner(model, pc.PrefixCache(block_size, max_entries=64), namespace)


def assert_matches_full_recomputation(model, result, tokens, origin=ORIGIN):
    """Suffix logits, whole-prompt K/V and metadata equal one uncached full pass."""
    input_ids, positions = prompt_tensors(tokens, origin)
    with torch.no_grad():
        full = model(input_ids, positions, use_cache=True)
    start = result.logit_start
    assert start == result.reused_tokens
    assert tuple(result.logits.shape) == (1, len(tokens) - start, full.logits.shape[-1])
    assert_close(result.logits, full.logits[:, start:], "suffix logits")
    assert_past_close(result.past_key_values, full.past_key_values, "prefill past_key_values")
    assert result.cache_lengths.tolist() == [len(tokens)]
    assert result.cache_start_positions.tolist() == [origin]


def prefill(runner, tokens, origin=ORIGIN):
    return runner.prefill(*prompt_tensors(tokens, origin))


def test_first_prefill_reuses_nothing(model):
    result = prefill(runner_for(model), PROMPT[:7])
    assert result.reused_tokens == 0
    assert_matches_full_recomputation(model, result, PROMPT[:7])


def test_extended_prompt_reuses_the_aligned_prefix(model):
    runner = runner_for(model, block_size=3)
    prefill(runner, PROMPT[:7])  # publishes blocks 3 and 6
    result = prefill(runner, PROMPT)
    assert result.reused_tokens == 6
    assert_matches_full_recomputation(model, result, PROMPT)


def test_whole_prompt_hit_recomputes_one_block(model):
    runner = runner_for(model, block_size=3)
    prefill(runner, PROMPT[:9])
    result = prefill(runner, PROMPT[:9])  # all of 3, 6, 9 cached; cap is 3 * floor(8 / 3)
    assert result.reused_tokens == 6
    assert_matches_full_recomputation(model, result, PROMPT[:9])


def test_one_block_prompt_is_never_reused(model):
    runner = runner_for(model, block_size=4)
    prefill(runner, PROMPT[:4])
    result = prefill(runner, PROMPT[:4])
    assert result.reused_tokens == 0
    assert_matches_full_recomputation(model, result, PROMPT[:4])


def test_prefill_publishes_every_block_of_the_prompt(model):
    runner = runner_for(model, block_size=3)
    result = prefill(runner, PROMPT[:10])
    assert runner.cache.entry_count == 3
    match = runner.cache.lookup_longest(NS, PROMPT[:10], start_position=ORIGIN)
    assert match is not None and match.prefix_length == 9
    whole = tuple((key[:, :, :9], value[:, :, :9]) for key, value in result.past_key_values)
    assert_past_close(match.past_key_values, whole, "published snapshot")


def test_branched_prompt_reuses_only_the_common_blocks(model):
    runner = runner_for(model, block_size=3)
    prefill(runner, PROMPT[:9])
    branch = (*PROMPT[:4], 0, 0, 0, 0, 0)  # diverges inside the second block
    result = prefill(runner, branch)
    assert result.reused_tokens == 3
    assert_matches_full_recomputation(model, result, branch)


def test_same_tokens_at_another_origin_reuse_nothing(model):
    runner = runner_for(model, block_size=3)
    prefill(runner, PROMPT[:9], origin=ORIGIN)
    result = prefill(runner, PROMPT[:9], origin=ORIGIN + 1)
    assert result.reused_tokens == 0
    assert_matches_full_recomputation(model, result, PROMPT[:9], origin=ORIGIN + 1)


def test_runners_in_other_namespaces_share_nothing(model):
    shared = pc.PrefixCache(3, max_entries=64)
    first = pc.PrefixCachedRunner(model, shared, NS)
    second = pc.PrefixCachedRunner(model, shared, pc.PrefixCacheNamespace("other", "runner"))
    prefill(first, PROMPT[:9])
    result = prefill(second, PROMPT[:9])
    assert result.reused_tokens == 0
    assert_matches_full_recomputation(model, result, PROMPT[:9])


@pytest.mark.parametrize("variant", list(MODULES))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_two_prefills_match_full_recomputation(variant, data):
    model = model_for(variant)
    block_size = data.draw(st.integers(1, 4), "block_size")
    origin = data.draw(st.integers(0, 4), "origin")
    budget = 16 - origin
    tokens = st.integers(0, 15)
    first = tuple(data.draw(st.lists(tokens, min_size=1, max_size=budget), "first"))
    shared = data.draw(st.integers(0, min(len(first), budget - 1)), "shared")
    tail = data.draw(st.lists(tokens, min_size=1, max_size=budget - shared), "tail")
    second = first[:shared] + tuple(tail)
    runner = runner_for(model, block_size)
    prefill(runner, first, origin)
    result = prefill(runner, second, origin)
    common = next(
        (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b),
        min(len(first), len(second)),
    )
    cap = block_size * ((len(second) - 1) // block_size)
    expected = block_size * (min(cap, common) // block_size)
    assert result.reused_tokens == expected
    assert_matches_full_recomputation(model, result, second, origin)
