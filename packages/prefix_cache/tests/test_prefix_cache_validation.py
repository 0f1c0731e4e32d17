"""Extension: bad input is a ValueError (bad value) or TypeError (wrong kind of object)
naming what is wrong, and changes nothing."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate
from gptlab_testkit.models import cache_aware_modules

pc = candidate("PREFIX_CACHE_MODULE")
NS = pc.PrefixCacheNamespace("model-a", "cache-0")

pytestmark = pytest.mark.extension

PROMPT = (3, 1, 4, 1, 5, 9, 2, 6)


@pytest.mark.owner("prefix_key")
@pytest.mark.parametrize(
    ("block_size", "error"),
    [
        (0, ValueError),
        (-4, ValueError),
        (True, TypeError),
        (2.0, TypeError),
        ("4", TypeError),
        (None, TypeError),
    ],
)
def test_block_size_must_be_a_positive_int(block_size, error):
    with pytest.raises(error, match="block_size"):
        pc.PrefixCache(block_size=block_size, max_entries=4)


@pytest.mark.owner("prefix_lru")
@pytest.mark.parametrize(
    ("max_entries", "error"),
    [(0, ValueError), (-1, ValueError), (False, TypeError), (3.5, TypeError)],
)
def test_capacity_must_be_a_positive_int(max_entries, error):
    with pytest.raises(error, match="max_entries"):
        pc.PrefixCache(block_size=4, max_entries=max_entries)


BAD_TOKENS = {
    "batch of two": (torch.zeros(2, 8, dtype=torch.long), ValueError),
    "flat tensor": (torch.zeros(8, dtype=torch.long), ValueError),
    "three dims": (torch.zeros(1, 1, 8, dtype=torch.long), ValueError),
    "float tensor": (torch.zeros(1, 8), ValueError),
    "floats": ([0.0] * 8, TypeError),
    "nested list": ([[1, 2, 3, 4, 5, 6, 7, 8]], TypeError),
    "string": ("abcdefgh", TypeError),
    "bools": ([True] * 8, TypeError),
    "negative id": ([1, 2, 3, -100, 5, 6, 7, 8], ValueError),
    "int": (8, TypeError),
}


@pytest.mark.owner("prefix_key")
@pytest.mark.parametrize(("tokens", "error"), BAD_TOKENS.values(), ids=BAD_TOKENS.keys())
def test_store_rejects_tokens_that_are_not_one_prompt(make_past, tokens, error):
    cache = pc.PrefixCache(block_size=4, max_entries=4)
    with pytest.raises(error, match="tokens"):
        cache.store(NS, tokens, make_past(PROMPT))
    assert cache.entry_count == 0


@pytest.mark.owner("prefix_key")
@pytest.mark.parametrize(("tokens", "error"), BAD_TOKENS.values(), ids=BAD_TOKENS.keys())
def test_lookup_rejects_tokens_that_are_not_one_prompt(tokens, error):
    cache = pc.PrefixCache(block_size=4, max_entries=4)
    with pytest.raises(error, match="tokens"):
        cache.lookup_longest(NS, tokens)


@pytest.mark.owner("prefix_key")
def test_numpy_style_integer_ids_are_accepted(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=4)
    ids = [torch.tensor(token) for token in PROMPT]  # 0-d integer tensors index like ints
    cache.store(NS, ids, make_past(PROMPT))
    assert cache.lookup_longest(NS, PROMPT) is not None


@pytest.mark.owner("prefix_key")
@pytest.mark.parametrize("namespace", [("model-a", "cache-0"), "model-a", None])
def test_namespace_must_be_a_prefix_cache_namespace(make_past, namespace):
    cache = pc.PrefixCache(block_size=4, max_entries=4)
    with pytest.raises(TypeError, match="namespace"):
        cache.store(namespace, PROMPT, make_past(PROMPT))
    with pytest.raises(TypeError, match="namespace"):
        cache.lookup_longest(namespace, PROMPT)


@pytest.mark.owner("prefix_key")
@pytest.mark.parametrize(
    ("start_position", "error"), [(-1, ValueError), (True, TypeError), (1.0, TypeError)]
)
def test_start_position_must_be_a_non_negative_int(make_past, start_position, error):
    cache = pc.PrefixCache(block_size=4, max_entries=4)
    with pytest.raises(error, match="start_position"):
        cache.store(NS, PROMPT, make_past(PROMPT), start_position=start_position)
    with pytest.raises(error, match="start_position"):
        cache.lookup_longest(NS, PROMPT, start_position=start_position)


@pytest.mark.owner("prefix_key")
@pytest.mark.parametrize(
    ("max_length", "error"), [(-1, ValueError), (False, TypeError), (4.0, TypeError)]
)
def test_max_length_must_be_a_non_negative_int(max_length, error):
    cache = pc.PrefixCache(block_size=4, max_entries=4)
    with pytest.raises(error, match="max_length"):
        cache.lookup_longest(NS, PROMPT, max_length=max_length)


@pytest.mark.owner("snapshot_ownership")
def test_store_rejects_kv_shorter_than_the_tokens(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=4)
    with pytest.raises(ValueError, match="fewer than the 8 tokens"):
        cache.store(NS, PROMPT, make_past(PROMPT[:6]))
    assert cache.entry_count == 0


@pytest.mark.owner("snapshot_ownership")
def test_store_rejects_a_kv_batch_other_than_one(make_past):
    cache = pc.PrefixCache(block_size=4, max_entries=4)
    with pytest.raises(ValueError, match="batch 2"):
        cache.store(NS, PROMPT, make_past(PROMPT, batch=2))
    assert cache.entry_count == 0


@pytest.mark.owner("snapshot_ownership")
@pytest.mark.parametrize("layout", ["empty", "not pairs", "three dims", "not tensors"])
def test_store_rejects_malformed_past_key_values(make_past, layout):
    past = make_past(PROMPT)
    malformed = {
        "empty": (),
        "not pairs": tuple((key,) for key, _ in past),
        "three dims": tuple((key[0], value[0]) for key, value in past),
        "not tensors": tuple((key.tolist(), value.tolist()) for key, value in past),
    }[layout]
    cache = pc.PrefixCache(block_size=4, max_entries=4)
    error = TypeError if layout == "not tensors" else ValueError
    with pytest.raises(error, match="past_key_values"):
        cache.store(NS, PROMPT, malformed)
    assert cache.entry_count == 0


def runner():
    model = next(iter(cache_aware_modules().values())).make_test_model()
    return pc.PrefixCachedRunner(model, pc.PrefixCache(block_size=4, max_entries=4), NS)


BAD_PROMPTS = {
    "batch of two": (torch.zeros(2, 8, dtype=torch.long), torch.arange(8).repeat(2, 1)),
    "flat": (torch.zeros(8, dtype=torch.long), torch.arange(8)),
    "float ids": (torch.zeros(1, 8), torch.arange(8).unsqueeze(0)),
    "int32 positions": (
        torch.zeros(1, 8, dtype=torch.long),
        torch.arange(8, dtype=torch.int32).unsqueeze(0),
    ),
    "positions too short": (torch.zeros(1, 8, dtype=torch.long), torch.arange(7).unsqueeze(0)),
    "empty": (torch.zeros(1, 0, dtype=torch.long), torch.zeros(1, 0, dtype=torch.long)),
}


@pytest.mark.owner("prefix_runner")
@pytest.mark.parametrize("prompt", BAD_PROMPTS.values(), ids=BAD_PROMPTS.keys())
def test_runner_rejects_a_prompt_that_is_not_one_row(prompt):
    prefix_runner = runner()
    with pytest.raises(ValueError, match="input_ids|positions"):
        prefix_runner.prefill(*prompt)
    assert prefix_runner.cache.entry_count == 0


@pytest.mark.owner("prefix_runner")
def test_runner_namespace_must_be_a_prefix_cache_namespace():
    model = next(iter(cache_aware_modules().values())).make_test_model()
    with pytest.raises(TypeError, match="namespace"):
        pc.PrefixCachedRunner(model, pc.PrefixCache(4, 4), ("model-a", "cache-0"))
