"""M05 extension: this package's rules beyond the kit's (tested apart, never scored):
argument checks (M05.17, M05.18), the Mixtral conventions on both sides (M05.19), atomic
loads and the LM's router telemetry (M05.20)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.boundary import BAD_VALUE, WRONG_KIND, assert_rejects

moe = candidate("MOE_LM_MODULE")

pytestmark = [pytest.mark.extension, pytest.mark.owner("moe_block")]

BLOCK = {"hidden_size": 8, "intermediate_size": 12, "num_experts": 4, "experts_per_token": 2}


@pytest.mark.clause("M05.17")
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("hidden_size", 0),
        ("intermediate_size", True),
        ("num_experts", 2.0),
        ("experts_per_token", 0),
    ],
    ids=["zero", "bool", "float", "no-experts-chosen"],
)
def test_a_bad_block_size_is_rejected(field, value):
    assert_rejects(
        lambda: moe.SparseMoE(**{**BLOCK, field: value}), WRONG_KIND, field, values=(value,)
    )


@pytest.mark.clause("M05.17")
def test_more_experts_per_token_than_experts_is_rejected():
    assert_rejects(
        lambda: moe.SparseMoE(**{**BLOCK, "experts_per_token": 5}),
        BAD_VALUE,
        ("experts_per_token", "num_experts"),
    )


@pytest.mark.clause("M05.17")
@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"num_experts": 0}, "num_experts"),
        ({"experts_per_token": 5}, "experts_per_token"),
        ({"moe_layers": (2,)}, "moe_layers"),
        ({"moe_layers": (1, 1)}, "moe_layers"),
        ({"moe_layers": [1]}, "moe_layers"),
    ],
    ids=["no-experts", "k-above-E", "layer-out-of-range", "repeated-layer", "a-list"],
)
def test_a_bad_lm_config_is_rejected(m05, overrides, named):
    assert_rejects(lambda: m05.config(**overrides), WRONG_KIND, named)


@pytest.mark.clause("M05.18")
@pytest.mark.parametrize(
    "bad",
    [torch.ones(2, 3, 9), torch.ones(2, 3, 8, dtype=torch.long), [[0.0] * 8]],
    ids=["width", "long", "list"],
)
def test_bad_hidden_states_are_rejected(bad):
    block = moe.SparseMoE(**BLOCK)
    assert_rejects(lambda: block(bad), WRONG_KIND, "hidden_states")
    assert_rejects(lambda: block.forward_vectorized(bad), WRONG_KIND, "hidden_states")


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


def mixtral_block(transformers, experts: int, k: int):
    from transformers.models.mixtral import modeling_mixtral

    config = transformers.MixtralConfig(
        hidden_size=16,
        intermediate_size=24,
        num_attention_heads=2,
        num_key_value_heads=2,
        num_local_experts=experts,
        num_experts_per_tok=k,
        experts_implementation="eager",
    )
    block = modeling_mixtral.MixtralSparseMoeBlock(config)
    generator = torch.Generator().manual_seed(170)
    with torch.no_grad():
        for parameter in block.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    return block.eval()


@pytest.mark.clause("M05.19")
def test_on_an_exact_tie_mixtral_takes_topks_pick_and_this_package_the_lowest_index(
    m05, transformers
):
    """torch.topk's order among equal values is unspecified; on the CPU it is not the
    lowest index (four tied experts: index 2 on torch 2.13)."""
    picked = int(torch.topk(torch.full((1, 4), 0.25), 1).indices)
    if picked == 0:
        pytest.skip("this torch's topk happens to pick the lowest index on a tie")
    reference = mixtral_block(transformers, experts=4, k=1)
    with torch.no_grad():
        reference.gate.weight.zero_()  # every expert ties
    split = moe.from_mixtral_state(reference.state_dict())
    ours = moe.SparseMoE(16, 24, 4, 1)
    ours.load_state_dict(split)
    x = torch.randn(1, 5, 16, generator=torch.Generator().manual_seed(171))
    with torch.no_grad():
        theirs = reference(x.clone())
        assert_close(ours(x).hidden_states, m05.swiglu(x, split, "experts.0."), "ours: expert 0")
        assert_close(theirs, m05.swiglu(x, split, f"experts.{picked}."), "Mixtral: topk's pick")
    assert ours(x).expert_counts.tolist() == [5, 0, 0, 0]


@pytest.mark.clause("M05.19")
def test_in_bfloat16_mixtral_routes_on_bfloat16_logits_and_this_package_on_float32(transformers):
    reference = mixtral_block(transformers, experts=4, k=1)
    router = torch.zeros(4, 16)
    router[0, 0], router[1, 0], router[1, 1], router[2:, 0] = 1.0, 1.0, 2.0**-10, -4.0
    with torch.no_grad():
        reference.gate.weight.copy_(router)
    ours = moe.SparseMoE(16, 24, 4, 1)
    ours.load_state_dict(moe.from_mixtral_state(reference.state_dict()))
    reference, ours = reference.to(torch.bfloat16), ours.to(torch.bfloat16)
    x = torch.ones(1, 1, 16, dtype=torch.bfloat16)
    logits, _, index = reference.gate(x.reshape(-1, 16))
    assert logits.dtype == torch.bfloat16 and logits[0, 0] == logits[0, 1]  # bfloat16 tie
    assert ours(x).router_logits.dtype == torch.float32
    assert ours(x).expert_counts.tolist() == [0, 1, 0, 0]  # float32 sees expert 1 ahead
    assert index.tolist() == [[1]]  # Mixtral's tie, broken by CPU topk toward the higher index


@pytest.mark.clause("M05.19")
def test_mixtral_state_conversion_is_exact_both_ways(transformers):
    reference = mixtral_block(transformers, experts=3, k=2)
    state = reference.state_dict()
    split = moe.from_mixtral_state(state)
    assert sorted(split) == sorted(moe.SparseMoE(16, 24, 3, 2).state_dict())
    assert torch.equal(split["experts.1.gate_proj.weight"], state["experts.gate_up_proj"][1, :24])
    assert torch.equal(split["experts.1.up_proj.weight"], state["experts.gate_up_proj"][1, 24:])
    back = moe.to_mixtral_state(split)
    assert sorted(back) == sorted(state)
    assert all(torch.equal(back[name], state[name]) for name in state)


@pytest.mark.clause("M05.20")
def test_a_misfit_checkpoint_changes_nothing(m05):
    config = m05.config()
    model = m05.loaded_lm(config, m05.random_state(config, seed=180))
    before = {name: t.clone() for name, t in model.state_dict().items()}
    bad = m05.random_state(config, seed=181)
    bad["model.layers.1.mlp.experts.0.up_proj.weight"] = torch.zeros(3, 3, device=test_device())
    with pytest.raises((ValueError, RuntimeError), match="up_proj"):
        model.load_state_dict(bad, strict=True)
    after = model.state_dict()
    assert all(torch.equal(after[name], before[name]) for name in before)


@pytest.mark.clause("M05.20")
def test_the_lm_reports_each_moe_layers_routing(m05):
    config = m05.config(moe_layers=None)
    state = m05.random_state(config, seed=182)
    model = m05.loaded_lm(config, state)
    ids = m05.ids(2, 5, config.vocab_size, seed=183)
    out = model(ids)
    assert len(out.router_logits) == len(out.expert_counts) == 2
    for logits, counts in zip(out.router_logits, out.expert_counts, strict=True):
        assert tuple(logits.shape) == (10, config.num_experts)
        assert int(counts.sum()) == 10 * config.experts_per_token
