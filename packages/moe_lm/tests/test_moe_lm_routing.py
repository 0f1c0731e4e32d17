"""Routing and combine: softmax over experts, top-k with the tie rule, weights summing to
1, exact counts, empty experts, and every token's output in its own row."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, test_device

pytestmark = [pytest.mark.contract, pytest.mark.owner("moe_router")]


@pytest.mark.clause("M05.3")
@pytest.mark.parametrize("k", [1, 2, 4], ids=["k1", "k2", "kE"])
def test_output_equals_the_token_by_token_oracle(m05, k):
    state = m05.block_state(seed=10 + k)
    block = m05.loaded_block(state, k=k)
    x = m05.tokens(3, 7, seed=20 + k)
    expected, _ = m05.mixture(x, state, k)
    assert_close(block(x).hidden_states.double(), expected, f"top-{k} mixture")


@pytest.mark.clause("M05.3")
@pytest.mark.parametrize(("experts", "k"), [(6, 2), (3, 1), (5, 3)], ids=["E6k2", "E3k1", "E5k3"])
def test_other_expert_counts_and_widths(m05, experts, k):
    state = m05.block_state(seed=30 + experts, hidden=8, inter=20, experts=experts)
    block = m05.loaded_block(state, k=k)
    x = m05.tokens(2, 9, seed=31, hidden=8)
    expected, _ = m05.mixture(x, state, k)
    assert_close(block(x).hidden_states.double(), expected, f"E={experts} top-{k} mixture")


@pytest.mark.clause("M05.3")
def test_a_sharp_router_still_matches_the_oracle(m05):
    """Large logits: nearly one-hot probabilities, where a weight taken from the wrong
    expert or left unnormalised shows at once."""
    state = m05.block_state(seed=40)
    block = m05.loaded_block(state, k=2)
    x = m05.tokens(4, 5, seed=41) * 3.0  # sharper routing: any renormalisation slip shows
    expected, _ = m05.mixture(x, state, 2)
    assert_close(block(x).hidden_states.double(), expected, "top-2 mixture, sharp router")


@pytest.mark.clause("M05.4")
@pytest.mark.parametrize("path", ["forward", "forward_vectorized"])
def test_a_zero_router_ties_every_expert_and_the_lowest_indices_win(m05, path):
    state = m05.block_state(seed=50)
    state["gate.weight"] = torch.zeros_like(state["gate.weight"])
    block = m05.loaded_block(state, k=2)
    x = m05.tokens(2, 4, seed=51)
    out = block(x) if path == "forward" else block.forward_vectorized(x)
    assert out.expert_counts.tolist() == [8, 8, 0, 0]
    expected = 0.5 * (m05.swiglu(x, state, "experts.0.") + m05.swiglu(x, state, "experts.1."))
    assert_close(out.hidden_states, expected, "experts 0 and 1, half each")


@pytest.mark.clause("M05.4")
@pytest.mark.parametrize("path", ["forward", "forward_vectorized"])
def test_equal_router_rows_tie_and_the_lower_index_runs(m05, path):
    """Experts 1 and 3 share a router row that beats the others: k=1 takes expert 1."""
    state = m05.block_state(seed=52)
    x = torch.ones(1, 3, 16, device=test_device())
    row = torch.full((16,), 0.5, device=test_device())
    state["gate.weight"] = torch.stack([-row, row, -row, row])
    block = m05.loaded_block(state, k=1)
    out = block(x) if path == "forward" else block.forward_vectorized(x)
    assert out.expert_counts.tolist() == [0, 3, 0, 0]
    assert_close(out.hidden_states, m05.swiglu(x, state, "experts.1."), "expert 1 alone")


@pytest.mark.clause("M05.4")
def test_a_tie_for_second_place_goes_to_the_lower_index(m05):
    """Expert 3 is first; experts 0 and 2 tie for second: top-2 is {3, 0}."""
    state = m05.block_state(seed=53)
    x = torch.ones(2, 2, 16, device=test_device())
    unit = torch.full((16,), 0.1, device=test_device())
    state["gate.weight"] = torch.stack([unit, -unit, unit, 2 * unit])
    block = m05.loaded_block(state, k=2)
    out = block(x)
    assert out.expert_counts.tolist() == [4, 0, 0, 4]
    expected, _ = m05.mixture(x, state, 2)
    assert_close(out.hidden_states.double(), expected, "experts 3 and 0")


@pytest.mark.clause("M05.5")
@pytest.mark.parametrize("k", [1, 2, 3])
def test_identical_experts_give_that_expert_whatever_the_router(m05, k):
    state = m05.block_state(seed=60 + k)
    for e in range(1, 4):
        for name in ("gate_proj", "up_proj", "down_proj"):
            state[f"experts.{e}.{name}.weight"] = state[f"experts.0.{name}.weight"]
    block = m05.loaded_block(state, k=k)
    x = m05.tokens(3, 5, seed=61)
    assert_close(block(x).hidden_states, m05.swiglu(x, state, "experts.0."), "weights sum to 1")


@pytest.mark.clause("M05.5")
def test_one_expert_per_token_is_weighted_one(m05):
    """With k=1 each token's output is its chosen expert's output, unscaled."""
    state = m05.block_state(seed=64)
    block = m05.loaded_block(state, k=1)
    x = m05.tokens(2, 6, seed=65)
    logits = x.reshape(-1, 16) @ state["gate.weight"].T
    chosen = logits.argmax(dim=-1)
    rows = x.reshape(-1, 16)
    expected = torch.stack(
        [m05.swiglu(rows[n], state, f"experts.{int(e)}.") for n, e in enumerate(chosen)]
    )
    assert_close(block(x).hidden_states.reshape(-1, 16), expected, "top-1 weight 1")


@pytest.mark.clause("M05.6")
@pytest.mark.parametrize("k", [1, 2])
def test_counts_are_the_oracles_and_sum_to_tokens_times_k(m05, k):
    state = m05.block_state(seed=70 + k)
    block = m05.loaded_block(state, k=k)
    x = m05.tokens(3, 8, seed=71)
    _, counts = m05.mixture(x, state, k)
    out = block(x)
    assert out.expert_counts.tolist() == counts.tolist()
    assert int(out.expert_counts.sum()) == 3 * 8 * k


@pytest.mark.clause("M05.6")
def test_counts_follow_a_router_that_sends_everything_one_way(m05):
    state = m05.block_state(seed=72)
    state["gate.weight"] = torch.zeros_like(state["gate.weight"])
    state["gate.weight"][2] = 1.0
    state["gate.weight"][1] = 0.5
    block = m05.loaded_block(state, k=2)
    x = torch.ones(2, 5, 16, device=test_device())
    assert block(x).expert_counts.tolist() == [0, 10, 10, 0]


@pytest.mark.clause("M05.7")
@pytest.mark.parametrize("path", ["forward", "forward_vectorized"])
def test_an_expert_no_token_chooses_adds_nothing(m05, path):
    state = m05.block_state(seed=80)
    x = m05.tokens(2, 6, seed=81).abs()  # positive: expert 3's logit is far below
    state["gate.weight"][3] = -torch.ones(16, device=test_device()) * 10  # never chosen
    block = m05.loaded_block(state, k=2)
    out = block(x) if path == "forward" else block.forward_vectorized(x)
    expected, counts = m05.mixture(x, state, 2)
    assert counts[3] == 0
    assert out.expert_counts.tolist() == counts.tolist()
    assert_close(out.hidden_states.double(), expected, "one empty expert")


@pytest.mark.clause("M05.7")
@pytest.mark.parametrize("path", ["forward", "forward_vectorized"])
def test_every_token_on_the_same_two_experts(m05, path):
    state = m05.block_state(seed=82)
    state["gate.weight"] = torch.zeros_like(state["gate.weight"])
    state["gate.weight"][0] = 0.3
    state["gate.weight"][2] = 0.2
    x = m05.tokens(3, 4, seed=83).abs() + 0.1
    block = m05.loaded_block(state, k=2)
    out = block(x) if path == "forward" else block.forward_vectorized(x)
    expected, counts = m05.mixture(x, state, 2)
    assert counts.tolist() == [12, 0, 12, 0]
    assert out.expert_counts.tolist() == [12, 0, 12, 0]
    assert_close(out.hidden_states.double(), expected, "two empty experts")


@pytest.mark.clause("M05.8")
def test_each_token_gets_what_it_gets_alone(m05):
    state = m05.block_state(seed=90)
    block = m05.loaded_block(state, k=2)
    x = m05.tokens(2, 5, seed=91)
    together = block(x).hidden_states
    for b in range(2):
        for t in range(5):
            alone = block(x[b : b + 1, t : t + 1]).hidden_states[0, 0]
            assert_close(together[b, t], alone, f"token ({b}, {t})")


@pytest.mark.clause("M05.8")
@pytest.mark.parametrize("path", ["forward", "forward_vectorized"])
def test_permuting_tokens_permutes_outputs(m05, path):
    state = m05.block_state(seed=92)
    block = m05.loaded_block(state, k=2)
    x = m05.tokens(1, 12, seed=93)
    order = torch.randperm(12, generator=torch.Generator().manual_seed(94)).to(test_device())
    call = block if path == "forward" else block.forward_vectorized
    plain, shuffled = call(x), call(x[:, order])
    assert_close(shuffled.hidden_states, plain.hidden_states[:, order], "permuted outputs")
    assert_close(shuffled.router_logits, plain.router_logits[order], "permuted router logits")
    assert torch.equal(shuffled.expert_counts, plain.expert_counts)


@pytest.mark.clause("M05.8")
def test_output_keeps_the_batch_and_time_layout(m05):
    state = m05.block_state(seed=95)
    block = m05.loaded_block(state, k=2)
    x = m05.tokens(3, 4, seed=96)
    expected, _ = m05.mixture(x.transpose(0, 1).contiguous(), state, 2)
    out = block(x.transpose(0, 1)).hidden_states  # a non-contiguous [T, B, C] view
    assert_close(out.double(), expected, "transposed input, same rows out")
