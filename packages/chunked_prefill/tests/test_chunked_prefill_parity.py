"""Chunked prefill equals one full cached call: logits, every K/V tensor, lengths, starts.

The oracle is the model itself called once on the whole prompt; a counting proxy
around the model checks the calls chunked prefill makes (ceil(T / C) cached calls of
at most C tokens, matching the reported chunk sizes).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_close, assert_past_close, candidate, test_device
from gptlab_testkit.models import cache_aware_modules

cp = candidate("CHUNKED_PREFILL_MODULE")
MODULES = cache_aware_modules()

pytestmark = [pytest.mark.contract, pytest.mark.owner("chunked_metadata")]

LENGTH = 7
POSITIONS = 16  # make_test_model() promises absolute positions 0..15, no more


@pytest.fixture(scope="module", params=list(MODULES), ids=list(MODULES))
def model(request):
    return MODULES[request.param].make_test_model().to(test_device())


class CallRecorder:
    """A cache-aware model that records the size and caching of every call it serves."""

    def __init__(self, model):
        self.model = model
        self.calls: list[tuple[int, bool]] = []  # (tokens in the call, use_cache)

    def __call__(self, input_ids, positions, **kwargs):
        self.calls.append((input_ids.shape[1], bool(kwargs.get("use_cache", False))))
        return self.model(input_ids, positions, **kwargs)


def prompt(origins, length=LENGTH, seed=0):
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 16, (len(origins), length), generator=generator).to(test_device())
    start = torch.tensor(origins, device=test_device())[:, None]
    return ids, start + torch.arange(length, device=test_device())


def assert_matches_one_call(model, ids, positions, chunk_size):
    with torch.no_grad():
        full = model(ids, positions, use_cache=True)
        recorder = CallRecorder(model)
        chunked = cp.chunked_prefill(recorder, ids, positions, chunk_size)
    T = ids.shape[1]
    what = f"chunk_size={chunk_size}, T={T}"
    assert_close(chunked.logits, full.logits, f"logits ({what})")
    assert_past_close(chunked.past_key_values, full.past_key_values, f"K/V ({what})")
    assert chunked.cache_lengths.tolist() == full.cache_lengths.tolist()
    assert chunked.cache_start_positions.tolist() == full.cache_start_positions.tolist()
    sizes = tuple(chunked.chunk_sizes)
    assert chunked.chunk_count == len(sizes) == math.ceil(T / chunk_size), what
    assert sum(sizes) == T and all(0 < size <= chunk_size for size in sizes), sizes
    assert recorder.calls == [(size, True) for size in sizes], "calls differ from chunk_sizes"


@pytest.mark.parametrize("chunk_size", [1, 2, 3, LENGTH, LENGTH + 5])
def test_chunked_prefill_matches_one_full_call(model, chunk_size):
    ids, positions = prompt(origins=[0, 0])
    assert_matches_one_call(model, ids, positions, chunk_size)


def test_rows_at_different_nonzero_origins_match_one_full_call(model):
    ids, positions = prompt(origins=[3, POSITIONS - LENGTH], seed=1)
    assert_matches_one_call(model, ids, positions, chunk_size=3)


def test_chunk_sizes_is_a_tuple_and_chunk_count_an_int(model):
    ids, positions = prompt(origins=[2])
    with torch.no_grad():
        chunked = cp.chunked_prefill(model, ids, positions, 3)
    assert isinstance(chunked.chunk_sizes, tuple)
    assert isinstance(chunked.chunk_count, int) and not isinstance(chunked.chunk_count, bool)


@settings(max_examples=8, deadline=None)
@given(length=st.integers(1, 9), chunk_size=st.integers(1, 10), data=st.data())
def test_any_split_matches_one_full_call(model, length, chunk_size, data):
    last_origin = POSITIONS - length  # every position stays inside the promised 0..15
    origins = data.draw(st.lists(st.integers(0, last_origin), min_size=1, max_size=3))
    ids, positions = prompt(origins, length=length, seed=length * 31 + chunk_size)
    assert_matches_one_call(model, ids, positions, chunk_size)
