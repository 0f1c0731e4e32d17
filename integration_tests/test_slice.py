"""The whole inference-state slice, end to end, against full recomputation.

Request A prefills through the prefix-cached runner and publishes block snapshots.
Request B shares A's first two blocks at the same origin: it looks them up, seeds
request-owned storage with spare capacity, chunk-prefills its own suffix, appends
the suffix delta into storage, then decodes, once with a plain greedy loop over the
storage and once speculatively. Every logit, K/V tensor and token must equal
recomputing B from scratch. Each mechanism is loaded through its variable, so any
one of them can be a candidate.
"""

from __future__ import annotations

import copy

import pytest
import torch

from gptlab_testkit import assert_close, assert_past_close, candidate, test_device

pytestmark = [pytest.mark.contract, pytest.mark.owner("slice_composition")]

kv_cache = candidate("KV_CACHE_MODULE")
prefix_cache = candidate("PREFIX_CACHE_MODULE")
chunked = candidate("CHUNKED_PREFILL_MODULE")
speculative = candidate("SPECULATIVE_DECODING_MODULE")

BLOCK = 4
ORIGIN = 1  # a nonzero absolute start: positions are never just 0..T-1
SHARED = [3, 1, 4, 1, 5, 9, 2, 6]  # two complete blocks
PROMPT_A = [*SHARED, 5, 3]
PROMPT_B = [*SHARED, 8, 9, 7]
NEW_TOKENS = 3  # last generated position: ORIGIN + 11 + 2 = 14 < context 16
CAPACITY = len(PROMPT_B) + NEW_TOKENS


DEVICE = test_device()


def ids(tokens: list[int]) -> torch.Tensor:
    return torch.tensor([tokens], dtype=torch.long, device=DEVICE)


def positions(start: int, count: int) -> torch.Tensor:
    return torch.arange(start, start + count, dtype=torch.long, device=DEVICE).unsqueeze(0)


def row(value: int) -> torch.Tensor:
    """Per-row metadata for the batch of one."""
    return torch.tensor([value], dtype=torch.long, device=DEVICE)


def namespace(model_id: str = "slice-model"):
    return prefix_cache.PrefixCacheNamespace(model_id=model_id, cache_id="slice")


def full(model, tokens: list[int], origin: int = ORIGIN):
    """The oracle: one uncached forward over the whole sequence."""
    with torch.no_grad():
        return model(ids(tokens), positions(origin, len(tokens)), use_cache=True)


def delta(past, start: int, stop: int):
    """The K/V of tokens start..stop-1 (a batch-1 functional cache)."""
    return tuple((k[:, :, start:stop], v[:, :, start:stop]) for k, v in past)


def greedy_over_storage(model, storage, last_logits: torch.Tensor, next_position: int, steps: int):
    """A plain decode loop whose only state is the request-owned storage."""
    tokens = []
    logits = last_logits
    for step in range(steps):
        token = logits[:, -1].argmax(dim=-1, keepdim=True)
        tokens.append(int(token))
        if step == steps - 1:
            break
        past, lengths, starts = storage.model_inputs()
        out = model(
            token, positions(next_position + step, 1), past, lengths, starts, use_cache=True
        )
        old = int(lengths[0])
        storage.append(delta(out.past_key_values, old, old + 1), positions(next_position + step, 1))
        logits = out.logits
    return tokens


def serve_request_b(model, cache):
    """Lookup, seed storage, chunked prefill of the suffix, append the delta."""
    match = cache.lookup_longest(namespace(), PROMPT_B, start_position=ORIGIN)
    assert match is not None, "B must hit A's snapshots"
    assert match.prefix_length == len(SHARED), "B must reuse both of A's blocks"
    storage = kv_cache.KVCache.from_past_key_values(
        match.past_key_values,
        row(match.prefix_length),
        row(ORIGIN),
        capacity=CAPACITY,
    )
    suffix = PROMPT_B[match.prefix_length :]
    past, lengths, starts = storage.model_inputs()
    with torch.no_grad():
        prefill = chunked.chunked_prefill(
            model,
            ids(suffix),
            positions(ORIGIN + match.prefix_length, len(suffix)),
            2,
            past_key_values=past,
            cache_lengths=lengths,
            cache_start_positions=starts,
        )
    storage.append(
        delta(prefill.past_key_values, match.prefix_length, len(PROMPT_B)),
        positions(ORIGIN + match.prefix_length, len(suffix)),
    )
    return storage, prefill


@pytest.fixture
def warmed(model_module):
    """A model and a prefix cache holding request A's snapshots."""
    model = model_module.make_test_model().to(DEVICE)
    cache = prefix_cache.PrefixCache(BLOCK, 8)
    runner = prefix_cache.PrefixCachedRunner(model, cache, namespace())
    with torch.no_grad():
        first = runner.prefill(ids(PROMPT_A), positions(ORIGIN, len(PROMPT_A)))
    assert first.reused_tokens == 0
    return model, cache


def test_request_b_prefill_matches_full_recomputation(warmed) -> None:
    model, cache = warmed
    storage, prefill = serve_request_b(model, cache)
    oracle = full(model, PROMPT_B)
    assert_close(prefill.logits, oracle.logits[:, len(SHARED) :], "suffix logits")
    assert_past_close(storage.snapshot(), oracle.past_key_values, "request storage")
    assert storage.cache_lengths.tolist() == [len(PROMPT_B)]
    assert storage.cache_start_positions.tolist() == [ORIGIN]


def test_request_b_greedy_decode_matches_generate_and_recomputation(warmed) -> None:
    model, cache = warmed
    storage, prefill = serve_request_b(model, cache)
    tokens = greedy_over_storage(model, storage, prefill.logits, ORIGIN + len(PROMPT_B), NEW_TOKENS)
    with torch.no_grad():
        expected = model.generate(ids(PROMPT_B), positions(ORIGIN, len(PROMPT_B)), NEW_TOKENS)
    assert tokens == expected[0, len(PROMPT_B) :].tolist()
    # Storage now holds B plus every generated token but the last (never fed back).
    oracle = full(model, PROMPT_B + tokens[:-1])
    assert_past_close(storage.snapshot(), oracle.past_key_values, "storage after decode")


def test_request_b_speculative_decode_matches_target_greedy(warmed) -> None:
    model, cache = warmed
    serve_request_b(model, cache)
    draft = copy.deepcopy(model)
    noise = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in draft.parameters():  # a close but imperfect draft
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=noise).to(DEVICE))
        result = speculative.speculative_generate(
            model, draft, ids(PROMPT_B), positions(ORIGIN, len(PROMPT_B)), NEW_TOKENS, 2
        )
        expected = model.generate(ids(PROMPT_B), positions(ORIGIN, len(PROMPT_B)), NEW_TOKENS)
    assert torch.equal(result.tokens, expected)
    assert result.verification_steps >= 1
