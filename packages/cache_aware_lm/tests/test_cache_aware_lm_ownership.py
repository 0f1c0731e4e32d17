"""The caller's cache, metadata and inputs are never written; outputs are new tensors."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import (
    assert_no_shared_storage,
    assert_past_unchanged,
    clone_past,
    test_device,
)
from gptlab_testkit.models import cache_aware_modules

MODULES = cache_aware_modules()
# The candidates these contract tests grade: M03 and its advanced branch (over M02).
GRADED_FOR = ("CACHE_AWARE_LM_MODULE", "CACHE_AWARE_MODERN_MODULE")
pytestmark = [
    pytest.mark.contract,
    pytest.mark.owner("cache_immutability"),
    pytest.mark.parametrize("lm", list(MODULES.values()), ids=list(MODULES)),
]


def _mixed_call(model, padded_cache):
    """A cache with room after every row (padding), so in-place appends would fit."""
    past, lengths, starts = padded_cache(model, [[1, 2, 3], [4], [5, 6]], [0, 4, 9], 3)
    T = 2
    ids = torch.tensor([[7, 8], [9, 10], [11, 12]], device=test_device())
    positions = (starts + lengths)[:, None] + torch.arange(T, device=test_device())
    return past, lengths, starts, ids, positions


@pytest.mark.parametrize("use_cache", [True, False])
def test_forward_never_writes_callers_cache_or_inputs(lm, padded_cache, use_cache):
    model = lm.make_test_model().to(test_device())
    past, lengths, starts, ids, positions = _mixed_call(model, padded_cache)
    saved = (clone_past(past), lengths.clone(), starts.clone(), ids.clone(), positions.clone())
    model(
        ids,
        positions,
        past_key_values=past,
        cache_lengths=lengths,
        cache_start_positions=starts,
        use_cache=use_cache,
    )
    assert_past_unchanged(saved[0], past, "caller's past_key_values")
    for name, before, after in zip(
        ("cache_lengths", "cache_start_positions", "input_ids", "positions"),
        saved[1:],
        (lengths, starts, ids, positions),
        strict=True,
    ):
        assert torch.equal(before, after), f"{name} was written in place"


def test_returned_cache_is_new_tensors(lm, padded_cache):
    model = lm.make_test_model().to(test_device())
    past, lengths, starts, ids, positions = _mixed_call(model, padded_cache)
    out = model(
        ids,
        positions,
        past_key_values=past,
        cache_lengths=lengths,
        cache_start_positions=starts,
        use_cache=True,
    )
    assert_no_shared_storage(out.past_key_values, past, "returned past_key_values")
    saved = clone_past(past)
    with torch.inference_mode():  # the returned tensors may be inference tensors
        for key, value in out.past_key_values:
            key.add_(1.0)
            value.add_(1.0)
    assert_past_unchanged(saved, past, "caller's cache after writing the returned one")
