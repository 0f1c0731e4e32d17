"""Grouped-query attention: q on the query heads, k and v on the kv heads, each kv head
serving a contiguous group of query heads (ratios 1, 4 and 8)."""

from __future__ import annotations

import pytest

from gptlab_testkit import assert_close

pytestmark = [pytest.mark.contract, pytest.mark.owner("modern_gqa")]


@pytest.mark.parametrize(
    ("heads", "kv_heads", "head_dim"),
    [(4, 4, 8), (8, 2, 4), (16, 2, 4)],
    ids=["ratio-1", "ratio-4", "ratio-8"],
)
@pytest.mark.clause("M02.30")
def test_grouped_attention_equals_the_repeated_kv_reference(m02, heads, kv_heads, head_dim):
    config = m02.config(
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        hidden_size=heads * head_dim,
        num_hidden_layers=1,
    )
    state = m02.random_state(config, seed=heads)
    ids, positions = m02.ids(2, 7, config.vocab_size, seed=1), m02.gapped_positions(2, 7, seed=2)
    expected = m02.logits(config, state, ids, positions)
    logits = m02.loaded(config, state)(ids, positions=positions).logits
    assert_close(logits, expected, f"{heads} query heads over {kv_heads} kv heads")


@pytest.mark.clause("M02.13", "M02.30")
def test_query_projection_has_the_query_heads_and_kv_projections_the_kv_heads(m02):
    config = m02.config(num_attention_heads=8, num_key_value_heads=2, head_dim=4)
    state = m02.model(config).state_dict()
    attention = "model.layers.0.self_attn."
    assert state[attention + "q_proj.weight"].shape[0] == 8 * 4
    assert state[attention + "k_proj.weight"].shape[0] == 2 * 4
    assert state[attention + "v_proj.weight"].shape[0] == 2 * 4
    assert state[attention + "o_proj.weight"].shape[1] == 8 * 4
