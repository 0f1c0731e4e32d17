"""Request storage under a cache-aware model: the prefix is computed once, loaded into a
KVCache, the suffix runs against `model_inputs()`, and its delta is appended.

A cache-aware forward returns K/V for the whole sequence (past + new); what
`append` takes is only the new tokens' K/V, `[B, H_kv, T, D]`: row b's slots
`old_length[b] .. old_length[b] + T - 1` of the returned cache (`new_token_kv`).
The oracle is one full, uncached recomputation of every prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.kv_storage import new_token_kv, pad_rows
from gptlab_testkit.models import cache_aware_modules

kvc = candidate("KV_CACHE_MODULE")
MODULES = cache_aware_modules()

pytestmark = pytest.mark.contract

SUFFIX = 3


@pytest.fixture(scope="module", params=list(MODULES), ids=list(MODULES))
def model(request):
    return MODULES[request.param].make_test_model().to(test_device())


def tokens(batch: int, length: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 16, (batch, length), generator=generator).to(test_device())


def long(rows: list[list[int]] | list[int]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def position_rows(starts: list[int], length: int) -> torch.Tensor:
    return long([[start + t for t in range(length)] for start in starts])


def run(model, ids, positions, cache=None):
    """One forward, from scratch or against a KVCache's model_inputs()."""
    # model_inputs() is (past_key_values, cache_lengths, cache_start_positions): the
    # model's own argument order after positions.
    cache_inputs = (None, None, None) if cache is None else cache.model_inputs()
    with torch.no_grad():
        return model(ids, positions, *cache_inputs, use_cache=True)


@dataclass
class SuffixRun:
    """A prefix loaded into request storage and the suffix run against its model_inputs()."""

    prefix_past: tuple  # what was loaded: [B, H_kv, S, D] per layer
    prefix_lengths: list[int]
    starts: list[int]
    capacity: int
    suffix: object  # the model output for the suffix
    suffix_positions: torch.Tensor

    def stored_after_append(self):
        """A fresh cache loaded with the prefix, after appending the suffix's delta."""
        cache = kvc.KVCache.from_past_key_values(
            self.prefix_past, long(self.prefix_lengths), long(self.starts), capacity=self.capacity
        )
        delta = new_token_kv(self.suffix.past_key_values, self.prefix_lengths, SUFFIX)
        cache.append(delta, self.suffix_positions)
        return cache


def run_suffix(model, prefix_past, prefix_lengths, starts, capacity, suffix_ids, suffix_positions):
    cache = kvc.KVCache.from_past_key_values(
        prefix_past, long(prefix_lengths), long(starts), capacity=capacity
    )
    suffix = run(model, suffix_ids, suffix_positions, cache)
    return SuffixRun(prefix_past, prefix_lengths, starts, capacity, suffix, suffix_positions)


@pytest.fixture(scope="module")
def shared_prefix(model):
    """Two rows at origins 0 and 5, 4 cached tokens each: (SuffixRun, full output)."""
    starts, prefix = [0, 5], 4
    ids = tokens(2, prefix + SUFFIX, seed=1)
    positions = position_rows(starts, prefix + SUFFIX)
    full = run(model, ids, positions)
    head = run(model, ids[:, :prefix], positions[:, :prefix])
    assert head.cache_lengths.tolist() == [prefix, prefix]
    suffix_run = run_suffix(
        model, head.past_key_values, [prefix, prefix], starts, prefix + SUFFIX + 2,
        ids[:, prefix:], positions[:, prefix:],
    )  # fmt: skip
    return suffix_run, full


@pytest.mark.owner("storage_lifecycle")
def test_suffix_logits_against_loaded_prefix_match_full_recomputation(shared_prefix):
    suffix_run, full = shared_prefix

    assert_close(suffix_run.suffix.logits, full.logits[:, 4:], "suffix logits")


@pytest.mark.owner("fixed_capacity_storage")
def test_snapshot_after_appending_suffix_delta_matches_full_recomputation(shared_prefix):
    suffix_run, full = shared_prefix

    cache = suffix_run.stored_after_append()

    assert cache.cache_lengths.tolist() == [4 + SUFFIX] * 2
    for index, ((key, value), (want_key, want_value)) in enumerate(
        zip(cache.snapshot(), full.past_key_values, strict=True)
    ):
        assert_close(key, want_key, f"layer {index} key")
        assert_close(value, want_value, f"layer {index} value")


@pytest.fixture(scope="module")
def mixed_prefixes(model):
    """Row 0: 2 cached tokens from position 1; row 1: 5 from position 0; per-row oracles.

    The loaded cache's padding holds huge values: only each row's prefix may count.
    """
    starts, prefixes = [1, 0], [2, 5]
    rows = []
    for b, (start, prefix) in enumerate(zip(starts, prefixes, strict=True)):
        ids, positions = (
            tokens(1, prefix + SUFFIX, seed=10 + b),
            position_rows([start], prefix + SUFFIX),
        )
        head = run(model, ids[:, :prefix], positions[:, :prefix])
        rows.append((ids[:, prefix:], positions[:, prefix:], head, run(model, ids, positions)))
    suffix_run = run_suffix(
        model,
        pad_rows([head.past_key_values for _, _, head, _ in rows], fill=1e9),
        prefixes,
        starts,
        9,
        torch.cat([suffix_ids for suffix_ids, *_ in rows]),
        torch.cat([suffix_positions for _, suffix_positions, *_ in rows]),
    )
    return suffix_run, [full for *_, full in rows]


@pytest.mark.owner("storage_lifecycle")
def test_mixed_length_rows_loaded_with_padding_give_each_rows_full_logits(mixed_prefixes):
    suffix_run, fulls = mixed_prefixes

    for b, (full, prefix) in enumerate(zip(fulls, suffix_run.prefix_lengths, strict=True)):
        assert_close(suffix_run.suffix.logits[b], full.logits[0, prefix:], f"row {b} logits")


@pytest.mark.owner("fixed_capacity_storage")
def test_mixed_length_rows_store_each_rows_full_cache_after_the_append(mixed_prefixes):
    suffix_run, fulls = mixed_prefixes

    cache = suffix_run.stored_after_append()

    prefixes = suffix_run.prefix_lengths
    assert cache.cache_lengths.tolist() == [p + SUFFIX for p in prefixes]
    assert cache.logical_length == max(prefixes) + SUFFIX
    snapshot = cache.snapshot()
    for b, (full, prefix) in enumerate(zip(fulls, prefixes, strict=True)):
        valid = prefix + SUFFIX
        for index, ((key, value), (want_key, want_value)) in enumerate(
            zip(snapshot, full.past_key_values, strict=True)
        ):
            assert_close(key[b, :, :valid], want_key[0], f"row {b} layer {index} key")
            assert_close(value[b, :, :valid], want_value[0], f"row {b} layer {index} value")


@pytest.mark.owner("fixed_capacity_storage")
def test_tokenwise_decode_through_request_storage_matches_full_recomputation(model):
    starts, length = [2, 0], 6
    ids, positions = tokens(2, length, seed=3), position_rows(starts, length)
    full = run(model, ids, positions)
    layers, (_, kv_heads, _, head_dim) = len(full.past_key_values), full.past_key_values[0][0].shape
    cache = kvc.KVCache(
        layers, 2, kv_heads, length, head_dim, device=test_device(), start_positions=long(starts)
    )

    for t in range(length):
        step = run(model, ids[:, t : t + 1], positions[:, t : t + 1], cache)
        assert_close(step.logits[:, 0], full.logits[:, t], f"step {t} logits")
        delta = new_token_kv(step.past_key_values, cache.cache_lengths, 1)
        cache.append(delta, positions[:, t : t + 1])

    for index, ((key, value), (want_key, want_value)) in enumerate(
        zip(cache.snapshot(), full.past_key_values, strict=True)
    ):
        assert_close(key, want_key, f"layer {index} key")
        assert_close(value, want_value, f"layer {index} value")
