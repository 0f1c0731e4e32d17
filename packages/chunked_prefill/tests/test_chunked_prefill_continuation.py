"""Chunked prefill continues a cache it is given and never writes it.

The given cache is a prefix the caller owns (rows at different origins, and rows
of different lengths with poisoned padding); the oracle is one full call of the
whole suffix on the same cache.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import (
    assert_close,
    assert_past_close,
    assert_past_unchanged,
    candidate,
    clone_past,
    test_device,
)
from gptlab_testkit.kv_storage import pad_rows
from gptlab_testkit.models import cache_aware_modules

cp = candidate("CHUNKED_PREFILL_MODULE")
MODULES = cache_aware_modules()

pytestmark = [pytest.mark.contract, pytest.mark.owner("chunked_metadata")]

SUFFIX = 5


@pytest.fixture(scope="module", params=list(MODULES), ids=list(MODULES))
def model(request):
    return MODULES[request.param].make_test_model().to(test_device())


def tokens(batch, length, seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 16, (batch, length), generator=generator).to(test_device())


def span(starts, length):
    return starts[:, None] + torch.arange(length, device=test_device())


def uniform_prefix(model):
    """Two rows, 4 cached tokens each, at origins 2 and 6 (one cached call)."""
    starts = torch.tensor([2, 6], device=test_device())
    with torch.no_grad():
        out = model(tokens(2, 4, seed=3), span(starts, 4), use_cache=True)
    return out.past_key_values, out.cache_lengths, out.cache_start_positions


def mixed_prefix(model):
    """Rows of 5 and 2 cached tokens at origins 0 and 4; padding slots hold 1e4."""
    starts = torch.tensor([0, 4], device=test_device())
    rows = []
    with torch.no_grad():
        for row, length in enumerate((5, 2)):
            ids = tokens(1, length, seed=10 + row)
            rows.append(model(ids, span(starts[row : row + 1], length), use_cache=True))
    past = pad_rows([row.past_key_values for row in rows], fill=1e4)
    return past, torch.tensor([5, 2], device=test_device()), starts


def valid_slots(past, row, length):
    return tuple((key[row, :, :length], value[row, :, :length]) for key, value in past)


def continue_both_ways(model, prefix, chunk_size):
    past, lengths, starts = prefix
    suffix_ids = tokens(lengths.shape[0], SUFFIX, seed=4)
    suffix_positions = span(starts + lengths, SUFFIX)
    cache = {"past_key_values": past, "cache_lengths": lengths, "cache_start_positions": starts}
    with torch.no_grad():
        full = model(suffix_ids, suffix_positions, use_cache=True, **cache)
        chunked = cp.chunked_prefill(model, suffix_ids, suffix_positions, chunk_size, **cache)
    return full, chunked


@pytest.mark.parametrize("chunk_size", [1, 2, SUFFIX])
def test_continues_a_given_prefix_like_one_full_call(model, chunk_size):
    prefix = uniform_prefix(model)
    full, chunked = continue_both_ways(model, prefix, chunk_size)
    assert_close(chunked.logits, full.logits, "suffix logits")
    assert_past_close(chunked.past_key_values, full.past_key_values, "prefix + suffix K/V")
    assert chunked.cache_lengths.tolist() == [4 + SUFFIX] * 2
    assert chunked.cache_start_positions.tolist() == [2, 6]


def test_continues_rows_of_different_lengths_ignoring_padding(model):
    prefix = mixed_prefix(model)
    full, chunked = continue_both_ways(model, prefix, chunk_size=2)
    assert_close(chunked.logits, full.logits, "suffix logits")
    assert chunked.cache_lengths.tolist() == [5 + SUFFIX, 2 + SUFFIX]
    assert chunked.cache_start_positions.tolist() == [0, 4]
    # Only each row's valid slots are specified; padding past a row's length is free.
    for row, length in enumerate(chunked.cache_lengths.tolist()):
        assert_past_close(
            valid_slots(chunked.past_key_values, row, length),
            valid_slots(full.past_key_values, row, length),
            f"row {row} valid K/V",
        )


@pytest.mark.parametrize("make_prefix", [uniform_prefix, mixed_prefix], ids=["uniform", "mixed"])
def test_the_given_cache_and_metadata_are_never_written(model, make_prefix):
    past, lengths, starts = make_prefix(model)
    before = (clone_past(past), lengths.clone(), starts.clone())
    continue_both_ways(model, (past, lengths, starts), chunk_size=2)
    assert_past_unchanged(before[0], past, "given cache")
    assert torch.equal(lengths, before[1]), "cache_lengths were written"
    assert torch.equal(starts, before[2]), "cache_start_positions were written"
