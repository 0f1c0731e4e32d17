"""Tokenwise and chunked runs equal one full run, at nonzero and differing origins."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_close, assert_past_close, test_device
from gptlab_testkit.models import cache_aware_modules

MODULES = cache_aware_modules()
# The candidates these contract tests grade: M03 and its advanced branch (over M02).
GRADED_FOR = ("CACHE_AWARE_LM_MODULE", "CACHE_AWARE_MODERN_MODULE")
pytestmark = [
    pytest.mark.contract,
    pytest.mark.parametrize("lm", list(MODULES.values()), ids=list(MODULES)),
]

ORIGINS = [3, 9]  # rows start at different nonzero absolute positions
LENGTH = 7


def _batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    device = test_device()
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 16, (len(ORIGINS), LENGTH), generator=generator).to(device)
    positions = torch.tensor(ORIGINS, device=device)[:, None] + torch.arange(LENGTH, device=device)
    return ids, positions


def _run_in_chunks(model, ids, positions, chunk_sizes):
    """Feed [B, T] as consecutive cached chunks; return (logits per chunk, last output)."""
    logits, out, begin = [], None, 0
    for size in chunk_sizes:
        end = begin + size
        cache = {}
        if out is not None:
            cache = {
                "past_key_values": out.past_key_values,
                "cache_lengths": out.cache_lengths,
                "cache_start_positions": out.cache_start_positions,
            }
        out = model(ids[:, begin:end], positions[:, begin:end], use_cache=True, **cache)
        logits.append(out.logits)
        begin = end
    return torch.cat(logits, dim=1), out


def _assert_matches_full(model, ids, positions, chunk_sizes):
    full = model(ids, positions, use_cache=True)
    logits, last = _run_in_chunks(model, ids, positions, chunk_sizes)
    assert_close(logits, full.logits, f"logits of chunks {chunk_sizes}")
    assert_past_close(last.past_key_values, full.past_key_values, f"K/V of chunks {chunk_sizes}")
    assert last.cache_lengths.tolist() == full.cache_lengths.tolist() == [LENGTH] * len(ORIGINS)
    assert last.cache_start_positions.tolist() == full.cache_start_positions.tolist() == ORIGINS


@pytest.mark.owner("tokenwise_cache")
def test_tokenwise_decode_matches_full_forward(lm):
    model = lm.make_test_model().to(test_device())
    ids, positions = _batch(seed=1)
    _assert_matches_full(model, ids, positions, [1] * LENGTH)


@pytest.mark.owner("rectangular_mask")
def test_chunk_after_cache_sees_every_cached_key(lm):
    model = lm.make_test_model().to(test_device())
    ids, positions = _batch(seed=2)
    _assert_matches_full(model, ids, positions, [3, 4])


@pytest.mark.owner("rectangular_mask")
@settings(max_examples=8, deadline=None)
@given(cuts=st.sets(st.integers(min_value=1, max_value=LENGTH - 1), max_size=LENGTH - 1))
def test_random_chunk_splits_match_full_forward(lm, cuts):
    model = lm.make_test_model().to(test_device())
    ids, positions = _batch(seed=3)
    bounds = [0, *sorted(cuts), LENGTH]
    _assert_matches_full(model, ids, positions, [b - a for a, b in itertools.pairwise(bounds)])


@pytest.mark.owner("position_origins")
def test_cached_prefix_at_origin_matches_uncached_rows(lm):
    """A cache that starts at a nonzero origin continues exactly as one uncached run."""
    model = lm.make_test_model().to(test_device())
    ids, positions = _batch(seed=4)
    full = model(ids, positions)
    prefix = model(ids[:, :5], positions[:, :5], use_cache=True)
    suffix = model(
        ids[:, 5:],
        positions[:, 5:],
        past_key_values=prefix.past_key_values,
        cache_lengths=prefix.cache_lengths,
        cache_start_positions=prefix.cache_start_positions,
    )
    assert_close(suffix.logits, full.logits[:, 5:], "suffix logits after an offset cache")


@pytest.mark.owner("position_origins")
def test_causal_at_nonzero_origin(lm):
    """Changing the token at index 4 leaves logits 0..3 unchanged, for rows at any origin."""
    model = lm.make_test_model().to(test_device())
    ids, positions = _batch(seed=5)
    changed = ids.clone()
    changed[:, 4] = (changed[:, 4] + 1) % 16
    before = model(ids, positions).logits
    after = model(changed, positions).logits
    assert_close(after[:, :4], before[:, :4], "logits before the changed token")
    assert not torch.allclose(after[:, 4:], before[:, 4:]), "a changed token must matter"


@pytest.mark.owner("position_origins")
def test_each_row_matches_itself_alone_at_its_origin(lm):
    model = lm.make_test_model().to(test_device())
    ids, positions = _batch(seed=6)
    prefix = model(ids[:, :3], positions[:, :3], use_cache=True)
    batched = model(
        ids[:, 3:],
        positions[:, 3:],
        past_key_values=prefix.past_key_values,
        cache_lengths=prefix.cache_lengths,
        cache_start_positions=prefix.cache_start_positions,
    )
    for row in range(len(ORIGINS)):
        alone = model(ids[row : row + 1], positions[row : row + 1])
        assert_close(batched.logits[row], alone.logits[0, 3:], f"row {row} (origin {ORIGINS[row]})")
