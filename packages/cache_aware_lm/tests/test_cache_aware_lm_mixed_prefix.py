"""Rows with different cached prefix lengths: padded slots never influence anything."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, test_device
from gptlab_testkit.models import cache_aware_modules

MODULES = cache_aware_modules()
# The candidates these contract tests grade: M03 and its advanced branch (over M02).
GRADED_FOR = ("CACHE_AWARE_LM_MODULE", "CACHE_AWARE_MODERN_MODULE")
pytestmark = [
    pytest.mark.contract,
    pytest.mark.parametrize("lm", list(MODULES.values()), ids=list(MODULES)),
]

PREFIXES = [[5, 1, 7, 2, 9], [3], [], [8, 8, 4]]  # one row has an empty prefix
STARTS = [0, 6, 11, 2]
SUFFIXES = [[4, 6, 1], [2, 2, 15], [9, 0, 3], [12, 5, 7]]


def _suffix_inputs(lengths, starts, new_tokens):
    device = test_device()
    ids = torch.tensor([row[:new_tokens] for row in SUFFIXES], device=device)
    positions = (starts + lengths)[:, None] + torch.arange(new_tokens, device=device)
    return ids, positions


def _row_alone(model, row, new_tokens):
    """Oracle: the row's prefix and suffix as one uncached run at its own origin."""
    device = test_device()
    tokens = PREFIXES[row] + SUFFIXES[row][:new_tokens]
    ids = torch.tensor([tokens], device=device)
    positions = STARTS[row] + torch.arange(len(tokens), device=device)[None]
    return model(ids, positions, use_cache=True)


def _run_mixed(model, padded_cache, new_tokens, poison=1e30):
    past, lengths, starts = padded_cache(model, PREFIXES, STARTS, extra_slots=2, poison=poison)
    ids, positions = _suffix_inputs(lengths, starts, new_tokens)
    return model(
        ids,
        positions,
        past_key_values=past,
        cache_lengths=lengths,
        cache_start_positions=starts,
        use_cache=True,
    )


@pytest.mark.owner("padded_slots")
@pytest.mark.parametrize("new_tokens", [1, 3])
def test_mixed_prefix_rows_match_each_row_alone(lm, padded_cache, new_tokens):
    model = lm.make_test_model().to(test_device())
    out = _run_mixed(model, padded_cache, new_tokens)
    for row, prefix in enumerate(PREFIXES):
        alone = _row_alone(model, row, new_tokens)
        assert_close(out.logits[row], alone.logits[0, len(prefix) :], f"row {row} logits")


@pytest.mark.owner("padded_slots")
@pytest.mark.parametrize("new_tokens", [1, 3])
def test_returned_rows_hold_each_rows_own_kv(lm, padded_cache, new_tokens):
    model = lm.make_test_model().to(test_device())
    out = _run_mixed(model, padded_cache, new_tokens)
    assert out.cache_lengths.tolist() == [len(p) + new_tokens for p in PREFIXES]
    for row in range(len(PREFIXES)):
        alone = _row_alone(model, row, new_tokens)
        valid = int(out.cache_lengths[row])
        for layer, ((key, value), (key_alone, value_alone)) in enumerate(
            zip(out.past_key_values, alone.past_key_values, strict=True)
        ):
            where = f"row {row} layer {layer}"
            assert_close(key[row, :, :valid], key_alone[0], f"{where} key slots 0..{valid - 1}")
            assert_close(value[row, :, :valid], value_alone[0], f"{where} value slots")


@pytest.mark.owner("padded_slots")
def test_padding_values_change_nothing(lm, padded_cache):
    model = lm.make_test_model().to(test_device())
    quiet = _run_mixed(model, padded_cache, 2, poison=0.0)
    loud = _run_mixed(model, padded_cache, 2, poison=-3e30)
    assert torch.isfinite(loud.logits).all(), "padding leaked into the logits"
    assert_close(loud.logits, quiet.logits, "logits with different padding")
    for row, length in enumerate(quiet.cache_lengths.tolist()):
        for (key_q, value_q), (key_l, value_l) in zip(
            quiet.past_key_values, loud.past_key_values, strict=True
        ):
            assert_close(key_l[row, :, :length], key_q[row, :, :length], "valid key slots")
            assert_close(value_l[row, :, :length], value_q[row, :, :length], "valid value slots")


@pytest.mark.owner("padded_slots")
def test_decode_steps_over_mixed_prefixes_match_rows_alone(lm, padded_cache):
    """Three tokenwise steps after a mixed-length cache, each checked against full rows."""
    model = lm.make_test_model().to(test_device())
    out = _run_mixed(model, padded_cache, 1)
    device = test_device()
    for step in range(1, 3):
        ids = torch.tensor([[row[step]] for row in SUFFIXES], device=device)
        positions = (out.cache_start_positions + out.cache_lengths)[:, None]
        out = model(
            ids,
            positions,
            past_key_values=out.past_key_values,
            cache_lengths=out.cache_lengths,
            cache_start_positions=out.cache_start_positions,
            use_cache=True,
        )
        for row, prefix in enumerate(PREFIXES):
            alone = _row_alone(model, row, step + 1)
            assert_close(out.logits[row, 0], alone.logits[0, len(prefix) + step], f"row {row}")
