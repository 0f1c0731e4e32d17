"""One decoder layer equals the decomposed RMSNorm/RoPE/GQA/SwiGLU oracle (slice 1's stop),
over randomized small shapes; attention is causal."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_close

pytestmark = [pytest.mark.contract, pytest.mark.owner("modern_attention")]


@st.composite
def layer_shapes(draw):
    kv_heads = draw(st.integers(1, 3))
    group = draw(st.sampled_from([1, 2, 4]))
    head_dim = draw(st.sampled_from([2, 4, 6]))
    heads = kv_heads * group
    return {
        "num_key_value_heads": kv_heads,
        "num_attention_heads": heads,
        "head_dim": head_dim,
        "hidden_size": heads * head_dim,
        "intermediate_size": draw(st.integers(1, 24)),
        "num_hidden_layers": 1,
        "vocab_size": draw(st.integers(2, 19)),
        "rms_norm_eps": draw(st.sampled_from([1e-6, 1e-2, 0.3])),
        "rope_theta": draw(st.sampled_from([10.0, 500.0, 10000.0])),
    }


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=layer_shapes(),
    batch=st.integers(1, 3),
    length=st.integers(1, 9),
    gapped=st.booleans(),
    origins=st.lists(st.integers(0, 40), min_size=3, max_size=3),
    seed=st.integers(0, 2**16),
)
@pytest.mark.clause("M02.18", "M02.20", "M02.27", "M02.29", "M02.30")
def test_one_layer_equals_the_decomposed_oracle(m02, sizes, batch, length, gapped, origins, seed):
    config = m02.config(**sizes)
    state = m02.random_state(config, seed=seed)
    ids = m02.ids(batch, length, config.vocab_size, seed=seed + 1)
    if gapped:
        positions = m02.gapped_positions(batch, length, seed=seed + 2)
    else:
        positions = m02.positions(origins[:batch], length)
    expected = m02.logits(config, state, ids, positions)
    logits = m02.loaded(config, state)(ids, positions=positions).logits
    assert_close(logits, expected, f"one layer, {sizes}", atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M02.26")
@pytest.mark.parametrize("changed", [0, 3, 6])
def test_a_changed_token_never_changes_earlier_logits(m02, changed):
    config = m02.config()
    model = m02.loaded(config, m02.random_state(config, seed=1))
    ids = m02.ids(2, 7, config.vocab_size, seed=2)
    other = ids.clone()
    other[:, changed] = (other[:, changed] + 1) % config.vocab_size
    before, after = model(ids).logits, model(other).logits
    assert_close(after[:, :changed], before[:, :changed], f"logits before token {changed}")
    assert not after[:, changed:].allclose(before[:, changed:]), "the changed token was ignored"


def _not_increasing(m02, kind: str):
    if kind == "equal":
        return m02.positions([5, 5], 7) * 0 + 5
    if kind == "decreasing":
        return m02.positions([0, 0], 7).flip(-1) * 3
    return m02.gapped_positions(2, 7, seed=4).flip(-1)  # decreasing with gaps


@pytest.mark.clause("M02.26")
@pytest.mark.parametrize("kind", ["equal", "decreasing", "gapped"])
def test_causality_is_by_index_whatever_the_positions(m02, kind):
    """Token t attends to tokens 0..t by index: positions that are equal or run backwards
    must not open the future (a mask built from positions would)."""
    config = m02.config()
    state = m02.random_state(config, seed=3)
    ids, positions = m02.ids(2, 7, config.vocab_size, seed=5), _not_increasing(m02, kind)
    expected = m02.logits(config, state, ids, positions)
    logits = m02.loaded(config, state)(ids, positions=positions).logits
    assert_close(logits, expected, f"logits at {kind} positions {positions.tolist()}")


@pytest.mark.clause("M02.26")
def test_a_changed_token_never_changes_earlier_logits_at_equal_positions(m02):
    config = m02.config()
    model = m02.loaded(config, m02.random_state(config, seed=6))
    ids, positions = m02.ids(2, 7, config.vocab_size, seed=7), _not_increasing(m02, "equal")
    other = ids.clone()
    other[:, 4] = (other[:, 4] + 1) % config.vocab_size
    before = model(ids, positions=positions).logits
    after = model(other, positions=positions).logits
    assert_close(after[:, :4], before[:, :4], "logits before the changed token 4")
