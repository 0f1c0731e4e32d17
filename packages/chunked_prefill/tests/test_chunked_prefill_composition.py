"""A prefix-cache hit, request storage and chunked prefill compose into full recomputation.

Request A publishes its prompt to a PrefixCache. Request B shares A's first 8
tokens: B looks them up, loads the match into a KVCache, chunk-prefills only its
suffix from the storage's model inputs, and appends the suffix's K/V delta back
into the storage. B's storage snapshot and suffix logits must equal B's full
recomputation.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, assert_past_close, candidate, test_device
from gptlab_testkit.kv_storage import new_token_kv
from gptlab_testkit.models import cache_aware_modules

cp = candidate("CHUNKED_PREFILL_MODULE")
kvc = candidate("KV_CACHE_MODULE")
pc = candidate("PREFIX_CACHE_MODULE")
MODULES = cache_aware_modules()

pytestmark = [pytest.mark.contract, pytest.mark.owner("slice_composition")]

START, BLOCK, SHARED, TAIL, CAPACITY = 3, 4, 8, 5, 16


@pytest.fixture(scope="module", params=list(MODULES), ids=list(MODULES))
def model(request):
    return MODULES[request.param].make_test_model().to(test_device())


def positions(length):
    return torch.arange(START, START + length, device=test_device())[None, :]


def prompts():
    generator = torch.Generator().manual_seed(8)
    prompt_a = torch.randint(0, 16, (1, SHARED + 3), generator=generator).to(test_device())
    tail_b = torch.randint(0, 16, (1, TAIL), generator=generator).to(test_device())
    return prompt_a, torch.cat([prompt_a[:, :SHARED], tail_b], dim=1)


def serve_b_with_chunked_suffix(model, chunk_size):
    """(B's storage after the suffix, B's chunked suffix output)."""
    prompt_a, prompt_b = prompts()
    namespace = pc.PrefixCacheNamespace("chunked-prefill-suite", "compose")
    prefix_cache = pc.PrefixCache(block_size=BLOCK, max_entries=4)
    with torch.no_grad():
        published = model(prompt_a, positions(prompt_a.shape[1]), use_cache=True)
    prefix_cache.store(namespace, prompt_a, published.past_key_values, start_position=START)

    match = prefix_cache.lookup_longest(namespace, prompt_b, start_position=START)
    assert match is not None and match.prefix_length == SHARED, "no 8-token prefix hit"
    storage = kvc.KVCache.from_past_key_values(
        match.past_key_values,
        torch.tensor([SHARED], device=test_device()),
        torch.tensor([START], device=test_device()),
        capacity=CAPACITY,
    )
    past, lengths, starts = storage.model_inputs()
    suffix_positions = positions(SHARED + TAIL)[:, SHARED:]
    with torch.no_grad():
        suffix = cp.chunked_prefill(
            model,
            prompt_b[:, SHARED:],
            suffix_positions,
            chunk_size,
            past_key_values=past,
            cache_lengths=lengths,
            cache_start_positions=starts,
        )
    storage.append(new_token_kv(suffix.past_key_values, [SHARED], TAIL), suffix_positions)
    return storage, suffix


@pytest.mark.parametrize("chunk_size", [2, 3])
def test_prefix_hit_chunked_suffix_and_append_equal_full_recomputation(model, chunk_size):
    storage, suffix = serve_b_with_chunked_suffix(model, chunk_size)
    _, prompt_b = prompts()
    with torch.no_grad():
        full = model(prompt_b, positions(prompt_b.shape[1]), use_cache=True)
    assert_close(suffix.logits, full.logits[:, SHARED:], "chunked suffix logits")
    assert storage.cache_lengths.tolist() == [SHARED + TAIL]
    assert storage.cache_start_positions.tolist() == [START]
    assert_past_close(storage.snapshot(), full.past_key_values, "request storage snapshot")
