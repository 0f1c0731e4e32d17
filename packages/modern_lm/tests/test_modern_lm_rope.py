"""RoPE: q and k rotated at the supplied positions (any origin), v untouched."""

from __future__ import annotations

import pytest

from gptlab_testkit import assert_close

pytestmark = [pytest.mark.contract, pytest.mark.owner("modern_rope")]


@pytest.mark.clause("M02.27")
def test_a_nonzero_starting_position_equals_the_oracle(m02):
    config = m02.config()
    state = m02.random_state(config, seed=1)
    ids, positions = m02.ids(1, 8, config.vocab_size, seed=2), m02.positions([9], 8)
    expected = m02.logits(config, state, ids, positions)
    assert_close(m02.loaded(config, state)(ids, positions=positions).logits, expected, "origin 9")


@pytest.mark.clause("M02.27")
def test_positions_with_gaps_equal_the_oracle(m02):
    config = m02.config()
    state = m02.random_state(config, seed=11)
    ids, positions = m02.ids(2, 8, config.vocab_size, seed=12), m02.gapped_positions(2, 8, seed=13)
    expected = m02.logits(config, state, ids, positions)
    logits = m02.loaded(config, state)(ids, positions=positions).logits
    assert_close(logits, expected, f"positions {positions.tolist()}")


@pytest.mark.clause("M02.27")
def test_rows_at_different_origins_equal_the_oracle(m02):
    config = m02.config()
    state = m02.random_state(config, seed=3)
    ids, positions = m02.ids(3, 6, config.vocab_size, seed=4), m02.positions([0, 5, 50], 6)
    positions[1, 3:] += 9  # a gap inside row 1
    expected = m02.logits(config, state, ids, positions)
    logits = m02.loaded(config, state)(ids, positions=positions).logits
    assert_close(logits, expected, "rows at origins 0, 5 (with a gap), 50")


@pytest.mark.clause("M02.25")
def test_default_positions_count_from_zero(m02):
    config = m02.config()
    model = m02.loaded(config, m02.random_state(config, seed=5))
    ids = m02.ids(2, 7, config.vocab_size, seed=6)
    explicit = model(ids, positions=m02.positions([0, 0], 7)).logits
    assert_close(model(ids).logits, explicit, "default positions")


@pytest.mark.clause("M02.28")
def test_values_carry_no_position(m02):
    """With zero q and k weights attention is uniform, so the output is the mean of the
    values: the same at every origin unless the values were rotated."""
    config = m02.config(num_hidden_layers=1)
    state = m02.random_state(config, seed=7)
    for name in ("q_proj", "k_proj"):
        state[f"model.layers.0.self_attn.{name}.weight"].zero_()
    model = m02.loaded(config, state)
    ids = m02.ids(2, 6, config.vocab_size, seed=8)
    at_zero = model(ids, positions=m02.positions([0, 0], 6)).logits
    assert_close(at_zero, m02.logits(config, state, ids), "uniform attention")
    shifted = model(ids, positions=m02.positions([13, 31], 6)).logits
    assert_close(shifted, at_zero, "uniform attention after a shift")


@pytest.mark.clause("M02.27")
def test_shifting_every_position_leaves_the_logits_unchanged(m02):
    """RoPE scores depend on p - p' only."""
    config = m02.config()
    model = m02.loaded(config, m02.random_state(config, seed=9))
    ids = m02.ids(2, 8, config.vocab_size, seed=10)
    at_zero = model(ids, positions=m02.positions([0, 0], 8)).logits
    shifted = model(ids, positions=m02.positions([7, 29], 8)).logits
    assert_close(shifted, at_zero, "logits after a shift", atol=1e-4, rtol=1e-4)
