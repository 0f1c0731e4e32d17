"""Dense equivalence: experts that all hold one SwiGLU's weights are that dense MLP (the LM's
side, logits equal to the dense M02 model's, is in test_moe_lm_model.py)."""

from __future__ import annotations

import pytest

from gptlab_testkit import assert_close

pytestmark = [pytest.mark.contract, pytest.mark.owner("moe_router")]


def copies_of_expert_zero(state, prefix: str, experts: int) -> None:
    for e in range(1, experts):
        for name in ("gate_proj", "up_proj", "down_proj"):
            state[f"{prefix}experts.{e}.{name}.weight"] = state[f"{prefix}experts.0.{name}.weight"]


@pytest.mark.clause("M05.10")
@pytest.mark.parametrize("path", ["forward", "forward_vectorized"])
def test_one_expert_is_the_dense_mlp(m05, path):
    state = m05.block_state(seed=140, experts=1)
    block = m05.loaded_block(state, k=1)
    x = m05.tokens(2, 7, seed=141)
    out = block(x) if path == "forward" else block.forward_vectorized(x)
    assert_close(out.hidden_states, m05.swiglu(x, state, "experts.0."), "one expert")
    assert out.expert_counts.tolist() == [14]


@pytest.mark.clause("M05.10")
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("path", ["forward", "forward_vectorized"])
def test_equal_experts_are_the_dense_mlp(m05, k, path):
    state = m05.block_state(seed=142 + k, experts=5)
    copies_of_expert_zero(state, "", 5)
    block = m05.loaded_block(state, k=k)
    x = m05.tokens(3, 4, seed=143)
    out = block(x) if path == "forward" else block.forward_vectorized(x)
    assert_close(out.hidden_states, m05.swiglu(x, state, "experts.0."), f"dense, top-{k}")
