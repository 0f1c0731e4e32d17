"""Router precision: a bfloat16 block routes in float32 and returns bfloat16."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, test_device

pytestmark = [pytest.mark.contract, pytest.mark.owner("moe_precision")]


def near_tie_state(m05) -> dict[str, torch.Tensor]:
    """Experts 0 and 1 whose logits on an all-ones token are 1 and 1 + 2^-10: distinct in
    float32, equal once rounded to bfloat16 (its step at 1 is 2^-7); experts 2, 3 far below.
    Every weight is exact in bfloat16."""
    state = m05.block_state(seed=130)
    router = torch.zeros(4, 16, device=test_device())
    router[0, 0] = 1.0
    router[1, 0], router[1, 1] = 1.0, 2.0**-10
    router[2:, 0] = -4.0
    state["gate.weight"] = router
    return {name: t.to(torch.bfloat16) for name, t in state.items()}


@pytest.mark.clause("M05.12")
@pytest.mark.parametrize("path", ["forward", "forward_vectorized"])
def test_bfloat16_in_bfloat16_out_with_float32_router_logits(m05, path):
    state = m05.block_state(seed=131)
    block = m05.loaded_block(state).to(torch.bfloat16)
    x = m05.tokens(2, 5, seed=132).to(torch.bfloat16)
    out = block(x) if path == "forward" else block.forward_vectorized(x)
    assert out.hidden_states.dtype == torch.bfloat16
    assert out.router_logits.dtype == torch.float32
    expected = x.reshape(-1, 16).float() @ state["gate.weight"].to(torch.bfloat16).float().T
    assert_close(out.router_logits, expected, "float32 router logits", atol=1e-5, rtol=1e-5)


@pytest.mark.clause("M05.12")
@pytest.mark.parametrize("path", ["forward", "forward_vectorized"])
def test_a_near_tie_is_ordered_as_in_float32(m05, path):
    state = near_tie_state(m05)
    block = m05.loaded_block({n: t.float() for n, t in state.items()}, k=1).to(torch.bfloat16)
    x = torch.ones(1, 3, 16, dtype=torch.bfloat16, device=test_device())
    out = block(x) if path == "forward" else block.forward_vectorized(x)
    assert out.expert_counts.tolist() == [0, 3, 0, 0], "a bfloat16 router ties experts 0 and 1"
    expected = m05.swiglu(x.float(), {n: t.float() for n, t in state.items()}, "experts.1.")
    assert_close(out.hidden_states.float(), expected, "expert 1's output", atol=0.05, rtol=0.05)


@pytest.mark.clause("M05.12")
def test_bfloat16_output_follows_the_float32_oracle(m05):
    state = m05.block_state(seed=133)
    low = {n: t.to(torch.bfloat16) for n, t in state.items()}
    block = m05.loaded_block(state).to(torch.bfloat16)
    x = m05.tokens(2, 6, seed=134).to(torch.bfloat16)
    expected, counts = m05.mixture(x, low, 2)
    out = block(x)
    assert out.expert_counts.tolist() == counts.tolist()
    assert_close(out.hidden_states.double(), expected, "bfloat16 mixture", atol=0.05, rtol=0.05)


@pytest.mark.clause("M05.12")
def test_a_float32_block_returns_float32(m05):
    block = m05.loaded_block(m05.block_state(seed=135))
    out = block(m05.tokens(1, 4, seed=136))
    assert out.hidden_states.dtype == torch.float32
    assert out.router_logits.dtype == torch.float32
