"""The prefix cache inside the slice: what it must never reuse, at the slice's own prompts.

Apart from test_slice.py because these tests call the prefix cache alone: a test file is
graded for every variable it names, and a kv_cache, chunked-prefill or speculative
candidate must earn nothing from tests that never call its code.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, assert_past_close, candidate, test_device

pytestmark = [pytest.mark.contract, pytest.mark.owner("slice_composition")]

prefix_cache = candidate("PREFIX_CACHE_MODULE")

BLOCK = 4
ORIGIN = 1  # a nonzero absolute start, as in test_slice.py
PROMPT_A = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]  # two complete blocks, then two tokens
PROMPT_B = [3, 1, 4, 1, 5, 9, 2, 6, 8, 9, 7]  # A's two blocks, then its own suffix
DEVICE = test_device()


def namespace(model_id: str = "slice-model"):
    return prefix_cache.PrefixCacheNamespace(model_id=model_id, cache_id="slice")


def at(tokens: list[int], origin: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, positions) of one request starting at `origin`."""
    where = torch.arange(origin, origin + len(tokens), dtype=torch.long, device=DEVICE)
    return torch.tensor([tokens], dtype=torch.long, device=DEVICE), where.unsqueeze(0)


def full(model, tokens: list[int], origin: int = ORIGIN):
    """The oracle: one uncached forward over the whole sequence."""
    with torch.no_grad():
        return model(*at(tokens, origin), use_cache=True)


@pytest.fixture
def warmed(model_module):
    """A model and a prefix cache holding request A's snapshots."""
    model = model_module.make_test_model().to(DEVICE)
    cache = prefix_cache.PrefixCache(BLOCK, 8)
    with torch.no_grad():
        prefix_cache.PrefixCachedRunner(model, cache, namespace()).prefill(*at(PROMPT_A, ORIGIN))
    return model, cache


def test_other_namespace_or_origin_never_hits(warmed) -> None:
    _, cache = warmed
    assert cache.lookup_longest(namespace("other-model"), PROMPT_B, start_position=ORIGIN) is None
    assert cache.lookup_longest(namespace(), PROMPT_B, start_position=ORIGIN + 1) is None
    assert cache.lookup_longest(namespace(), PROMPT_B, start_position=ORIGIN) is not None


def test_shifted_origin_prefill_reuses_nothing_and_stays_exact(warmed) -> None:
    model, cache = warmed
    runner = prefix_cache.PrefixCachedRunner(model, cache, namespace())
    with torch.no_grad():
        out = runner.prefill(*at(PROMPT_B, ORIGIN + 2))
    assert out.reused_tokens == 0
    oracle = full(model, PROMPT_B, origin=ORIGIN + 2)
    assert_close(out.logits, oracle.logits[:, out.logit_start :], "logits at a new origin")


def test_evicted_entry_falls_back_to_full_prefill(model_module) -> None:
    model = model_module.make_test_model().to(DEVICE)
    cache = prefix_cache.PrefixCache(BLOCK, 2)  # room for one prompt's two blocks
    runner = prefix_cache.PrefixCachedRunner(model, cache, namespace())
    with torch.no_grad():
        runner.prefill(*at(PROMPT_A, ORIGIN))
        runner.prefill(*at([7, 7, 7, 7, 6, 6, 6, 6, 5], ORIGIN))  # evicts A
        out = runner.prefill(*at(PROMPT_B, ORIGIN))
    assert out.reused_tokens == 0
    oracle = full(model, PROMPT_B)
    assert out.logit_start == 0
    assert_close(out.logits, oracle.logits, "logits after eviction")
    assert_past_close(out.past_key_values, oracle.past_key_values, "K/V after eviction")
