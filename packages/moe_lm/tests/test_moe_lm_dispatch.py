"""The vectorized dispatch equals the loop reference; backward reaches the router and the
chosen experts and nothing else."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, test_device

pytestmark = [pytest.mark.contract, pytest.mark.owner("moe_dispatch")]


@pytest.mark.clause("M05.9")
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize(("batch", "length"), [(3, 7), (1, 1), (2, 16)])
def test_vectorized_equals_the_loop(m05, k, batch, length):
    state = m05.block_state(seed=100 + k)
    block = m05.loaded_block(state, k=k)
    x = m05.tokens(batch, length, seed=101 + length)
    loop, fast = block(x), block.forward_vectorized(x)
    assert_close(fast.hidden_states, loop.hidden_states, "vectorized hidden states")
    assert_close(fast.router_logits, loop.router_logits, "vectorized router logits")
    assert fast.expert_counts.tolist() == loop.expert_counts.tolist()


@pytest.mark.clause("M05.9")
def test_vectorized_equals_the_oracle_with_an_empty_expert(m05):
    state = m05.block_state(seed=110, experts=5)
    x = m05.tokens(2, 9, seed=111).abs()
    state["gate.weight"][0] = -torch.ones(16, device=test_device()) * 10  # never chosen
    block = m05.loaded_block(state, k=2)
    expected, counts = m05.mixture(x, state, 2)
    fast = block.forward_vectorized(x)
    assert counts[0] == 0
    assert fast.expert_counts.tolist() == counts.tolist()
    assert_close(fast.hidden_states.double(), expected, "vectorized, one empty expert")


@pytest.mark.clause("M05.9")
def test_vectorized_with_unbalanced_experts(m05):
    """One expert takes most tokens, others one or two: the packing's widths differ."""
    state = m05.block_state(seed=112, experts=6)
    state["gate.weight"][4] += 2.0
    block = m05.loaded_block(state, k=2)
    x = m05.tokens(4, 5, seed=113)
    expected, counts = m05.mixture(x, state, 2)
    fast = block.forward_vectorized(x)
    assert fast.expert_counts.tolist() == counts.tolist()
    assert_close(fast.hidden_states.double(), expected, "vectorized, unbalanced experts")


def _grads(block) -> dict[str, torch.Tensor | None]:
    return {name: p.grad for name, p in block.named_parameters()}


@pytest.mark.clause("M05.11")
@pytest.mark.parametrize("path", ["forward", "forward_vectorized"])
def test_backward_reaches_the_router_and_every_chosen_expert(m05, path):
    state = m05.block_state(seed=120)
    x = m05.tokens(2, 6, seed=121).abs()
    state["gate.weight"][2] = -torch.ones(16, device=test_device()) * 10  # never chosen
    block = m05.loaded_block(state, k=2).train()
    out = block(x) if path == "forward" else block.forward_vectorized(x)
    out.hidden_states.sum().backward()
    grads = _grads(block)
    chosen = [e for e, n in enumerate(out.expert_counts.tolist()) if n > 0]
    assert chosen == [0, 1, 3]
    router = grads["gate.weight"]
    assert router is not None and router.abs().sum() > 0, "no gradient reached the router"
    for e in chosen:
        for name in ("gate_proj", "up_proj", "down_proj"):
            grad = grads[f"experts.{e}.{name}.weight"]
            assert grad is not None and grad.abs().sum() > 0, f"expert {e} {name}: no gradient"
    for name in ("gate_proj", "up_proj", "down_proj"):
        grad = grads[f"experts.2.{name}.weight"]
        assert grad is None or grad.abs().sum() == 0, f"unchosen expert 2 {name} got a gradient"


@pytest.mark.clause("M05.11")
def test_the_router_gradient_matches_the_oracles(m05):
    """The router's gradient flows through the renormalised weights: compare it with
    autograd through the float64 oracle."""
    state = m05.block_state(seed=122)
    x = m05.tokens(2, 5, seed=123)
    block = m05.loaded_block(state, k=2).train()
    block(x).hidden_states.sum().backward()
    leaf = {name: t.double().clone().requires_grad_(True) for name, t in state.items()}
    expected, _ = m05.mixture(x, leaf, 2)
    expected.sum().backward()
    router = dict(block.named_parameters())["gate.weight"].grad
    assert router is not None
    assert_close(router.double(), leaf["gate.weight"].grad, "router gradient", atol=1e-4, rtol=1e-4)
