"""Separate Q/K/V into one packed parameter (M04.8), gate/up into one merged parameter
(M04.9), and checkpoints refused before any parameter changes (M04.10)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate

rt = candidate("RUNTIME_LM_MODULE")

pytestmark = [pytest.mark.contract, pytest.mark.owner("runtime_loading")]


@pytest.mark.clause("M04.8")
@pytest.mark.parametrize("kv_heads", [4, 2], ids=["mha", "gqa2"])
def test_qkv_is_q_then_k_then_v_rows(m04, kv_heads):
    sizes = m04.sizes(num_key_value_heads=kv_heads)
    state = m04.random_state(sizes, seed=41)
    model = m04.loaded(m04.config(num_key_value_heads=kv_heads), state)

    packed = model.state_dict()
    for i in range(2):
        p = f"model.layers.{i}.self_attn."
        expected = torch.cat(
            [state[p + "q_proj.weight"], state[p + "k_proj.weight"], state[p + "v_proj.weight"]]
        )
        assert torch.equal(packed[p + "qkv_proj.weight"], expected), p
    # the parameters the model reports are the ones it runs with
    requests = m04.requests([3, 2], seed=40)
    assert_close(m04.run(model, requests), m04.flat_hidden(sizes, state, requests).float())


@pytest.mark.clause("M04.8")
@pytest.mark.parametrize("kv_heads", [4, 2], ids=["mha", "gqa2"])
def test_outputs_follow_the_loaded_qkv(m04, kv_heads):
    sizes = m04.sizes(num_key_value_heads=kv_heads)
    state = m04.random_state(sizes, seed=42)
    model = m04.loaded(m04.config(num_key_value_heads=kv_heads), state)
    requests = m04.requests([3, 5], seed=43)

    assert_close(m04.run(model, requests), m04.flat_hidden(sizes, state, requests).float())


@pytest.mark.clause("M04.8")
def test_swapping_k_and_v_in_the_checkpoint_changes_the_model(m04):
    sizes = m04.sizes()
    state = m04.random_state(sizes, seed=44)
    p = "model.layers.0.self_attn."
    swapped = {
        **state,
        p + "k_proj.weight": state[p + "v_proj.weight"],
        p + "v_proj.weight": state[p + "k_proj.weight"],
    }
    model = m04.loaded(m04.config(), swapped)
    requests = m04.requests([4], seed=45)

    hidden = m04.run(model, requests)

    assert_close(hidden, m04.flat_hidden(sizes, swapped, requests).float())
    assert not torch.allclose(hidden, m04.flat_hidden(sizes, state, requests).float(), atol=1e-3)


@pytest.mark.clause("M04.9")
def test_gate_up_is_gate_then_up_rows(m04):
    state = m04.random_state(m04.sizes(), seed=46)
    model = m04.loaded(m04.config(), state)

    packed = model.state_dict()
    for i in range(2):
        p = f"model.layers.{i}.mlp."
        expected = torch.cat([state[p + "gate_proj.weight"], state[p + "up_proj.weight"]])
        assert torch.equal(packed[p + "gate_up_proj.weight"], expected), p
        assert torch.equal(packed[p + "down_proj.weight"], state[p + "down_proj.weight"]), p
    # the parameters the model reports are the ones it runs with
    requests = m04.requests([4, 1], seed=39)
    assert_close(m04.run(model, requests), m04.flat_hidden(m04.sizes(), state, requests).float())


@pytest.mark.clause("M04.9")
def test_swapping_gate_and_up_changes_the_mlp(m04):
    sizes = m04.sizes()
    state = m04.random_state(sizes, seed=47)
    p = "model.layers.1.mlp."
    swapped = {
        **state,
        p + "gate_proj.weight": state[p + "up_proj.weight"],
        p + "up_proj.weight": state[p + "gate_proj.weight"],
    }
    requests = m04.requests([5, 2], seed=48)

    right = m04.run(m04.loaded(m04.config(), state), requests)
    wrong = m04.run(m04.loaded(m04.config(), swapped), requests)

    assert_close(right, m04.flat_hidden(sizes, state, requests).float())
    assert_close(wrong, m04.flat_hidden(sizes, swapped, requests).float())
    assert not torch.allclose(right, wrong, atol=1e-3)


@pytest.mark.clause("M04.10")
def test_a_load_returns_the_parameters_it_loaded(m04):
    model = m04.model(m04.config())
    loaded = model.load_weights(m04.pairs(m04.random_state(m04.sizes(), seed=49)))

    assert loaded == {name for name, _ in model.named_parameters()}
    assert "model.layers.0.self_attn.qkv_proj.weight" in loaded


@pytest.mark.clause("M04.10")
def test_a_load_copies_the_checkpoint(m04):
    sizes = m04.sizes()
    state = m04.random_state(sizes, seed=50)
    model = m04.loaded(m04.config(), state)
    requests = m04.requests([4], seed=51)
    before = m04.run(model, requests)

    for tensor in state.values():
        tensor.mul_(-2.0)

    assert torch.equal(m04.run(model, requests), before)


def refused_checkpoint(m04, fault: str):
    """A whole fresh checkpoint (other values) with one fault, the faulty item last (but
    for ``unexpected-first``: a loader must not forget a problem it met early)."""
    state = m04.random_state(m04.sizes(), seed=52)
    k = "model.layers.1.self_attn.k_proj.weight"
    items = [(name, tensor) for name, tensor in state.items() if name != k]
    if fault == "missing":
        return items, k
    if fault == "missing-head":
        return [
            (name, tensor) for name, tensor in state.items() if name != "lm_head.weight"
        ], "lm_head.weight"
    if fault == "duplicate":
        return [*items, (k, state[k]), (k, state[k] * 2)], k
    if fault == "unexpected":
        extra = "model.layers.2.self_attn.q_proj.weight"
        return [
            *items,
            (k, state[k]),
            (extra, state["model.layers.1.self_attn.q_proj.weight"]),
        ], extra
    if fault == "unexpected-first":
        extra = "model.layers.7.mlp.up_proj.weight"
        return [(extra, state["model.layers.1.mlp.up_proj.weight"]), *items, (k, state[k])], extra
    if fault == "unknown-name":
        extra = "model.layers.0.self_attn.q_norm.weight"
        return [*items, (k, state[k]), (extra, state["model.norm.weight"])], extra
    if fault == "misshaped":
        return [*items, (k, state["model.layers.1.self_attn.q_proj.weight"])], k
    gate = "model.layers.1.mlp.gate_proj.weight"  # misshaped: transposed
    return [*[(n, t) for n, t in items if n != gate], (k, state[k]), (gate, state[gate].T)], gate


@pytest.mark.clause("M04.10")
@pytest.mark.parametrize(
    "fault",
    [
        "missing",
        "missing-head",
        "duplicate",
        "unexpected",
        "unexpected-first",
        "unknown-name",
        "misshaped",
        "transposed",
    ],
)
def test_a_bad_checkpoint_fails_before_any_parameter_changes(m04, fault):
    model = m04.loaded(m04.config(), m04.random_state(m04.sizes(), seed=53))
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    items, named = refused_checkpoint(m04, fault)

    with pytest.raises((ValueError, KeyError)) as refused:
        model.load_weights(iter(items))

    assert named in str(refused.value), f"the error should name {named}: {refused.value}"
    after = model.state_dict()
    assert [name for name in before if not torch.equal(after[name], before[name])] == []


@pytest.mark.clause("M04.10")
def test_a_refused_checkpoint_leaves_the_outputs_as_they_were(m04):
    state = m04.random_state(m04.sizes(), seed=54)
    model = m04.loaded(m04.config(), state)
    requests = m04.requests([3, 3], seed=55)
    items, _ = refused_checkpoint(m04, "missing")

    with pytest.raises((ValueError, KeyError)):
        model.load_weights(iter(items))

    assert_close(m04.run(model, requests), m04.flat_hidden(m04.sizes(), state, requests).float())
