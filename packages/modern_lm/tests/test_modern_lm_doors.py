"""This package's doors beyond the contract (M02.35-M02.38): every malformed call to the
config, forward, load and the public layers is a ValueError or TypeError naming the
argument (or the key), raised before anything changes; loads are atomic; a tied model
refuses a checkpoint whose embedding and head differ."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

import modern_lm
from gptlab_testkit.boundary import WRONG_KIND, assert_rejected_unchanged, assert_rejects
from gptlab_testkit.objects import assert_same_object

pytestmark = pytest.mark.extension

LOAD_ERRORS = (ValueError, TypeError)


def checkpoint_cases(m02, config):
    """(label, state, names): a strict-load checkpoint with one thing wrong."""
    good = m02.random_state(config, seed=2)
    key = "model.layers.1.mlp.up_proj.weight"

    def without(name):
        return {k: v for k, v in good.items() if k != name}

    return [
        ("missing", without("model.norm.weight"), "model.norm.weight"),
        (
            "unexpected",
            {**good, "model.layers.0.self_attn.q_proj.bias": good["model.norm.weight"]},
            "q_proj.bias",
        ),
        ("misshaped", {**good, key: good[key][:, :-1]}, key),
        ("integer", {**good, key: good[key].long()}, key),
        ("not a tensor", {**good, key: good[key].tolist()}, key),
        ("extra layer", {**good, "model.layers.2.mlp.up_proj.weight": good[key]}, "layers.2"),
        ("meta", {**good, key: good[key].to("meta")}, key),
    ]


@pytest.mark.owner("modern_checkpoint")
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize(
    "case", ["missing", "unexpected", "misshaped", "integer", "not a tensor", "extra layer", "meta"]
)
def test_a_checkpoint_that_does_not_fit_changes_nothing(m02, tied, case):
    config = m02.config(tie_word_embeddings=tied)
    model = m02.model(config, seed=1)
    _label, state, name = next(c for c in checkpoint_cases(m02, config) if c[0] == case)
    assert_rejected_unchanged(model, lambda: model.load_state_dict(state), LOAD_ERRORS, name)
    if tied:
        assert_same_object(
            model.lm_head.weight,
            model.model.embed_tokens.weight,
            "lm_head and embed_tokens weights",
        )


@pytest.mark.owner("modern_checkpoint")
def test_a_rejected_load_is_also_a_runtime_error_as_torch_s(m02):
    config = m02.config()
    state = m02.random_state(config, seed=3)
    del state["lm_head.weight"]
    with pytest.raises(RuntimeError, match="lm_head.weight"):
        m02.model(config).load_state_dict(state)


@pytest.mark.owner("modern_registration")
def test_a_tied_model_refuses_a_checkpoint_whose_embedding_and_head_differ(m02):
    config = m02.config(tie_word_embeddings=True)
    state = m02.random_state(config, seed=4)
    state["lm_head.weight"] = state["lm_head.weight"] + 1.0
    model = m02.model(config, seed=5)
    assert_rejected_unchanged(
        model, lambda: model.load_state_dict(state), LOAD_ERRORS, "lm_head.weight"
    )


@pytest.mark.owner("modern_registration")
def test_assign_keeps_the_tie(m02):
    config = m02.config(tie_word_embeddings=True)
    state = {k: v.clone() for k, v in m02.random_state(config, seed=6).items()}
    state["lm_head.weight"] = state["model.embed_tokens.weight"].clone()
    model = m02.model(config)
    model.load_state_dict(state, assign=True)
    assert_same_object(
        model.lm_head.weight, model.model.embed_tokens.weight, "lm_head and embed_tokens weights"
    )
    assert torch.equal(model.lm_head.weight, state["lm_head.weight"])


@pytest.mark.owner("modern_checkpoint")
def test_a_non_strict_load_skips_missing_keys_and_refuses_a_misshaped_one(m02):
    config = m02.config()
    state = m02.random_state(config, seed=7)
    model = m02.model(config, seed=8)
    partial = {"model.norm.weight": state["model.norm.weight"]}
    result = model.load_state_dict(partial, strict=False)
    assert "lm_head.weight" in result.missing_keys
    assert torch.equal(model.state_dict()["model.norm.weight"], state["model.norm.weight"])
    bad = {**partial, "lm_head.weight": state["lm_head.weight"][:-1]}
    assert_rejected_unchanged(
        model, lambda: model.load_state_dict(bad, strict=False), LOAD_ERRORS, "lm_head.weight"
    )


@pytest.mark.owner("modern_checkpoint")
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"state_dict": [1, 2]}, "state_dict"),
        ({"strict": "yes"}, "strict"),
        ({"assign": 1}, "assign"),
    ],
)
def test_load_arguments_of_the_wrong_kind(m02, kwargs, name):
    config = m02.config()
    model = m02.model(config)
    arguments = {"state_dict": m02.random_state(config, seed=9), **kwargs}
    assert_rejected_unchanged(model, lambda: model.load_state_dict(**arguments), WRONG_KIND, name)


@pytest.mark.owner("modern_decoder")
@pytest.mark.parametrize(
    ("labels", "name"),
    [("vocab", "labels"), ("negative", "labels"), ("float", "labels"), ("list", "labels")],
)
def test_labels_outside_the_vocabulary_or_of_the_wrong_kind_are_refused(m02, labels, name):
    config = m02.config()
    model = m02.model(config).train()
    ids = m02.ids(2, 5, config.vocab_size, seed=10)
    bad = {
        "vocab": ids.clone().index_fill_(
            1, torch.tensor([3], device=ids.device), config.vocab_size
        ),
        "negative": torch.full_like(ids, -5),
        "float": ids.float(),
        "list": ids.tolist(),
    }[labels]
    assert_rejected_unchanged(model, lambda: model(ids, labels=bad), LOAD_ERRORS, name)


@pytest.mark.owner("modern_config")
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("rope_theta", 0.5),
        ("rms_norm_eps", 1e-40),
        ("rope_theta", "100"),
        ("tie_word_embeddings", 1),
    ],
)
def test_this_package_refuses_what_the_contract_leaves_open(m02, field, value):
    assert_rejects(lambda: m02.config(**{field: value}), LOAD_ERRORS, field)


LLAMA = {
    "hidden_act": "silu",
    "vocab_size": 11,
    "hidden_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 20,
    "max_position_embeddings": 16,
    "rope_theta": 10000.0,
}


@pytest.mark.owner("modern_config")
@pytest.mark.parametrize(
    ("override", "name"),
    [
        ({"num_attention_heads": 0}, "num_attention_heads"),
        ({"num_attention_heads": "4"}, "num_attention_heads"),
        ({"tie_word_embeddings": "no"}, "tie_word_embeddings"),
        ({"rope_scaling": {"rope_type": "llama3"}}, "llama3"),
        ({"rms_norm_eps": math.nan}, "rms_norm_eps"),
    ],
)
def test_a_llama_config_outside_the_supported_set_is_refused(override, name):
    llama = SimpleNamespace(**{**LLAMA, **override})
    assert_rejects(lambda: modern_lm.config_from_llama(llama), LOAD_ERRORS, name)


@pytest.mark.owner("modern_config")
def test_config_from_llama_refuses_something_that_is_not_a_config():
    assert_rejects(lambda: modern_lm.config_from_llama(5), WRONG_KIND, "llama_config")


def _layers(m02):
    config = m02.config()
    positions = m02.positions([0, 0], 5).cpu()
    cos, sin = modern_lm.RotaryEmbedding(config.head_dim, config.rope_theta)(
        positions, torch.float32
    )
    return config, cos, sin


HELPER_CASES = {
    "norm width": (
        lambda c, cos, sin: modern_lm.RMSNorm(c.hidden_size, 1e-6)(
            torch.ones(2, c.hidden_size - 1)
        ),
        "x",
    ),
    "norm integers": (
        lambda c, cos, sin: modern_lm.RMSNorm(c.hidden_size, 1e-6)(
            torch.ones(2, c.hidden_size, dtype=torch.long)
        ),
        "x",
    ),
    "norm list": (lambda c, cos, sin: modern_lm.RMSNorm(4, 1e-6)([1.0] * 4), "x"),
    "mlp width": (
        lambda c, cos, sin: modern_lm.SwiGLU(c.hidden_size, 8)(torch.ones(2, c.hidden_size + 1)),
        "x",
    ),
    "mlp integers": (
        lambda c, cos, sin: modern_lm.SwiGLU(4, 8)(torch.ones(2, 4, dtype=torch.long)),
        "x",
    ),
    "repeat_kv 0": (
        lambda c, cos, sin: modern_lm.repeat_kv(torch.ones(1, 2, 3, 4), 0),
        "group_size",
    ),
    "repeat_kv 3-D": (lambda c, cos, sin: modern_lm.repeat_kv(torch.ones(2, 3, 4), 2), "x"),
    "repeat_kv float": (
        lambda c, cos, sin: modern_lm.repeat_kv(torch.ones(1, 2, 3, 4), 2.0),
        "group_size",
    ),
    "attention width": (
        lambda c, cos, sin: modern_lm.GroupedQueryAttention(c)(
            torch.ones(2, 5, c.hidden_size - 1), cos, sin
        ),
        "x",
    ),
    "attention 2-D": (
        lambda c, cos, sin: modern_lm.GroupedQueryAttention(c)(
            torch.ones(5, c.hidden_size), cos, sin
        ),
        "x",
    ),
    "attention config": (lambda c, cos, sin: modern_lm.GroupedQueryAttention(None), "config"),
    "layer config": (lambda c, cos, sin: modern_lm.DecoderLayer({"hidden_size": 4}), "config"),
    "rotate_half odd": (lambda c, cos, sin: modern_lm.rotate_half(torch.ones(2, 3)), "x"),
    "rotate_half list": (lambda c, cos, sin: modern_lm.rotate_half([1.0, 2.0]), "x"),
    "loss logits 2-D": (
        lambda c, cos, sin: modern_lm.shifted_cross_entropy(
            torch.ones(2, 11), torch.zeros(2, 5, dtype=torch.long)
        ),
        "logits",
    ),
    "loss labels": (
        lambda c, cos, sin: modern_lm.shifted_cross_entropy(
            torch.ones(2, 5, 11), torch.full((2, 5), 11)
        ),
        "labels",
    ),
    "trunk positions": (
        lambda c, cos, sin: modern_lm.ModernModel(c)(
            torch.zeros(2, 5, dtype=torch.long), torch.full((2, 5), c.max_position_embeddings)
        ),
        "positions",
    ),
    "check_float other": (lambda c, cos, sin: modern_lm.check_float("alpha", -1.0), "alpha"),
}


@pytest.mark.owner("modern_attention")
@pytest.mark.parametrize("case", sorted(HELPER_CASES))
def test_the_public_layers_refuse_malformed_input_naming_it(m02, case):
    call, name = HELPER_CASES[case]
    config, cos, sin = _layers(m02)
    assert_rejects(lambda: call(config, cos, sin), LOAD_ERRORS, name)


@pytest.mark.owner("modern_rmsnorm")
def test_a_float64_norm_reduces_in_float64():
    x = torch.tensor([[1.0, 1.0 + 2**-40]], dtype=torch.float64)
    out = modern_lm.RMSNorm(2, 1e-12)(x)
    expected = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-12)
    assert out.dtype == torch.float64
    assert torch.equal(out, expected)
