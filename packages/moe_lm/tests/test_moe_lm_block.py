"""The block's interface: construction, registered experts, checkpoint paths, outputs."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate
from gptlab_testkit.objects import assert_instance

moe = candidate("MOE_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("moe_block")]


@pytest.mark.clause("M05.1")
@pytest.mark.parametrize(("experts", "k"), [(4, 2), (3, 1), (1, 1)], ids=["E4k2", "E3k1", "E1k1"])
def test_state_dict_has_the_router_and_each_experts_paths(m05, experts, k):
    block = m05.block(16, 24, experts, k)
    shapes = {name: tuple(t.shape) for name, t in block.state_dict().items()}
    assert shapes == m05.block_shapes(16, 24, experts)
    dtypes = {name: p.dtype for name, p in block.named_parameters()}
    assert set(dtypes.values()) == {torch.float32}, dtypes
    assert sorted(dtypes) == sorted(shapes), "every state-dict tensor is a Parameter"


@pytest.mark.clause("M05.1")
def test_keyword_construction_and_a_module_list_of_experts(m05):
    with torch.random.fork_rng(devices=[]):
        block = moe.SparseMoE(
            hidden_size=8, intermediate_size=12, num_experts=5, experts_per_token=2
        )
    assert_instance(block, torch.nn.Module, "the MoE block")
    assert_instance(block.experts, torch.nn.ModuleList, "block.experts")
    assert len(block.experts) == 5
    assert sorted(block.state_dict()) == sorted(m05.block_shapes(8, 12, 5))


@pytest.mark.clause("M05.1")
def test_a_strict_load_sets_every_weight(m05):
    state = m05.block_state(seed=1)
    block = m05.loaded_block(state)
    loaded = block.state_dict()
    assert sorted(loaded) == sorted(state)
    for name, tensor in state.items():
        assert torch.equal(loaded[name], tensor), name


@pytest.mark.clause("M05.2")
@pytest.mark.parametrize("path", ["forward", "forward_vectorized"])
@pytest.mark.parametrize(("batch", "length"), [(2, 5), (1, 1), (3, 1), (1, 7)])
def test_output_fields_and_shapes(m05, path, batch, length):
    block = m05.loaded_block(m05.block_state(seed=2))
    x = m05.tokens(batch, length, seed=3)
    out = block(x) if path == "forward" else block.forward_vectorized(x)
    for field in ("hidden_states", "router_logits", "expert_counts"):
        assert hasattr(out, field), f"the output has no {field}"
    assert tuple(out.hidden_states.shape) == (batch, length, 16)
    assert tuple(out.router_logits.shape) == (batch * length, 4)
    assert tuple(out.expert_counts.shape) == (4,)
    assert out.expert_counts.dtype == torch.int64


@pytest.mark.clause("M05.2")
def test_router_logits_rows_are_tokens_in_row_major_order(m05):
    state = m05.block_state(seed=4)
    block = m05.loaded_block(state)
    x = m05.tokens(2, 3, seed=5)
    expected = x.reshape(6, 16).double() @ state["gate.weight"].double().T
    assert_close(block(x).router_logits.double(), expected, "router logits, row b*T + t")


@pytest.mark.clause("M05.13")
@pytest.mark.parametrize(("experts", "k"), [(4, 2), (2, 1), (6, 3)], ids=["E4k2", "E2k1", "E6k3"])
def test_seeded_constructions_are_equal(m05, experts, k):
    first = m05.block(experts=experts, k=k, seed=7).state_dict()
    second = m05.block(experts=experts, k=k, seed=7).state_dict()
    assert sorted(first) == sorted(second)
    for name in first:
        assert torch.equal(first[name], second[name]), name


@pytest.mark.clause("M05.13")
@pytest.mark.parametrize("path", ["forward", "forward_vectorized"])
def test_two_calls_give_equal_outputs(m05, path):
    block = m05.loaded_block(m05.block_state(seed=8))
    x = m05.tokens(3, 6, seed=9)
    call = block if path == "forward" else block.forward_vectorized
    first, second = call(x), call(x)
    assert torch.equal(first.hidden_states, second.hidden_states)
    assert torch.equal(first.router_logits, second.router_logits)
    assert torch.equal(first.expert_counts, second.expert_counts)
