"""M02's parts still correct inside the fragment: logits equal the float64 oracle (M10.2)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate

fragment = candidate("FRAGMENT_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("fragment_decoder")]


@pytest.mark.clause("M10.2")
@pytest.mark.parametrize("kv_heads", [4, 2, 1], ids=["ratio1", "ratio2", "ratio4"])
def test_logits_equal_the_oracle_for_each_gqa_ratio(m10, kv_heads):
    config = m10.config(num_key_value_heads=kv_heads)
    state = m10.random_state(config, seed=20 + kv_heads)
    ids, positions = m10.ids(2, 6, seed=30), m10.runs([0, 11], 6)
    want = m10.forward(m10.plain(num_key_value_heads=kv_heads), state, ids, positions).logits
    assert_close(m10.loaded(config, state)(ids, positions).logits, want, atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M10.2")
@pytest.mark.parametrize("k", [1, 2], ids=["top1", "top2"])
def test_logits_equal_the_oracle_at_nonzero_origins(m10, k):
    config = m10.config(experts_per_token=k)
    state = m10.random_state(config, seed=40 + k)
    ids, positions = m10.ids(3, 5, seed=41), m10.runs([7, 0, 50], 5)
    want = m10.forward(m10.plain(experts_per_token=k), state, ids, positions).logits
    assert_close(m10.loaded(config, state)(ids, positions).logits, want, atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M10.2")
def test_the_same_tokens_at_another_origin_give_the_same_logits(m10):
    """RoPE scores through relative offsets only; a cached call is where absolute positions
    show (M10.3's tests)."""
    config = m10.config()
    model = m10.loaded(config, m10.random_state(config, seed=43))
    ids = m10.ids(1, 6, seed=44).expand(2, 6).contiguous()
    out = model(ids, m10.runs([0, 30], 6)).logits
    assert_close(out[0], out[1], atol=1e-4, rtol=1e-4)


@pytest.mark.clause("M10.2")
def test_one_token_rows(m10):
    config = m10.config()
    state = m10.random_state(config, seed=45)
    ids, positions = m10.ids(3, 1, seed=46), torch.tensor([[0], [9], [63]])
    want = m10.forward(m10.plain(), state, ids, positions).logits
    assert_close(m10.loaded(config, state)(ids, positions).logits, want, atol=1e-4, rtol=1e-4)
