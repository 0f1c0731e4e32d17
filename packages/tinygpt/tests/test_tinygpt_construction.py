"""Tier 0: configuration, module tree, parameter count, tying and output shape."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from torch import nn

from gptlab_testkit import candidate, test_device
from gptlab_testkit.boundary import other_devices
from gptlab_testkit.messages import what_is_wrong
from gptlab_testkit.objects import is_instance, object_id

tg = candidate("TINY_GPT_MODULE")

pytestmark = [pytest.mark.tier0, pytest.mark.contract]

SIZE_FIELDS = ("vocab_size", "context_length", "d_model", "n_layers", "n_heads", "d_ff")

INVALID_FIELDS = [
    *((name, value) for name in SIZE_FIELDS for value in (0, -2, 4.0, True)),
    ("dropout", -0.1),
    ("dropout", 1.0),
    ("dropout", math.nan),
    ("dropout", math.inf),
    ("layer_norm_eps", 0.0),
    ("layer_norm_eps", -1e-5),
    ("layer_norm_eps", math.nan),
    ("layer_norm_eps", math.inf),
]


def expected_parameter_count(config) -> int:
    V, ctx, C, L, F = (
        config.vocab_size,
        config.context_length,
        config.d_model,
        config.n_layers,
        config.d_ff,
    )
    return V * C + ctx * C + L * (4 * C * C + 2 * C * F + 9 * C + F) + 2 * C


def contract_parameter_paths(n_layers: int) -> set[str]:
    paths = {"token_embedding.weight", "position_embedding.weight", "lm_head.weight"}
    paths |= {"final_norm.weight", "final_norm.bias"}
    per_block = [
        f"{module}.{kind}"
        for module in (
            "attention_norm",
            "attention.qkv_proj",
            "attention.out_proj",
            "mlp_norm",
            "mlp.up_proj",
            "mlp.down_proj",
        )
        for kind in ("weight", "bias")
    ]
    paths |= {f"blocks.{i}.{path}" for i in range(n_layers) for path in per_block}
    return paths


@pytest.mark.rejection
@pytest.mark.owner("config_validation")
@pytest.mark.parametrize(("field", "value"), INVALID_FIELDS, ids=lambda v: repr(v))
def test_config_rejects_invalid_field(tiny_sizes, field, value):
    with pytest.raises(ValueError, match=what_is_wrong(field, values=[value])):
        tg.GPTConfig(**{**tiny_sizes, field: value})


@pytest.mark.rejection
@pytest.mark.owner("config_validation")
def test_config_rejects_d_model_not_divisible_by_heads(tiny_sizes):
    with pytest.raises(ValueError, match=what_is_wrong("d_model", "n_heads", values=[18, 4])):
        tg.GPTConfig(**{**tiny_sizes, "d_model": 18, "n_heads": 4})


@pytest.mark.rejection
@pytest.mark.owner("config_validation")
def test_config_replace_revalidates(tiny_sizes):
    config = tg.GPTConfig(**tiny_sizes)
    with pytest.raises(ValueError):
        dataclasses.replace(config, n_heads=3)
    with pytest.raises(ValueError):
        dataclasses.replace(config, dropout=1.5)


@pytest.mark.rejection
@pytest.mark.owner("config_validation")
def test_config_is_frozen(tiny_sizes):
    config = tg.GPTConfig(**tiny_sizes)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.d_model = 32


@pytest.mark.owner("config_validation")
def test_config_fields_defaults_and_head_dim(tiny_sizes):
    names = [field.name for field in dataclasses.fields(tg.GPTConfig)]
    assert names[:8] == [*SIZE_FIELDS, "dropout", "layer_norm_eps"]
    config = tg.GPTConfig(*tiny_sizes.values())
    assert (config.dropout, config.layer_norm_eps) == (0.0, 1e-5)
    assert config.head_dim == tiny_sizes["d_model"] // tiny_sizes["n_heads"]


@pytest.mark.owner("registration")
def test_blocks_are_a_registered_module_list(make_model):
    model = make_model()
    assert is_instance(model.blocks, nn.ModuleList)
    assert len(model.blocks) == model.config.n_layers
    registered = {object_id(parameter) for parameter in model.parameters()}
    for block in model.blocks:
        assert all(object_id(parameter) in registered for parameter in block.parameters())


@pytest.mark.owner("registration")
def test_unique_parameter_count_matches_formula():
    config = tg.GPTConfig(
        vocab_size=11, context_length=7, d_model=12, n_layers=3, n_heads=3, d_ff=20
    )
    model = tg.TinyGPT(config)
    assert sum(parameter.numel() for parameter in model.parameters()) == (
        expected_parameter_count(config)
    )


@pytest.mark.owner("registration")
def test_parameter_paths_are_the_contract_tree(make_model):
    model = make_model(n_layers=3)
    paths = {name for name, _ in model.named_parameters(remove_duplicate=False)}
    assert paths == contract_parameter_paths(3)
    assert contract_parameter_paths(3) <= set(model.state_dict())


@pytest.mark.owner("registration")
def test_modules_have_contract_types_and_shapes(make_model):
    model = make_model(layer_norm_eps=1e-3)
    config = model.config
    V, ctx, C, F = config.vocab_size, config.context_length, config.d_model, config.d_ff
    assert isinstance(config, tg.GPTConfig)
    assert model.token_embedding.weight.shape == (V, C)
    assert model.position_embedding.weight.shape == (ctx, C)
    assert is_instance(model.lm_head, nn.Linear)
    assert model.lm_head.bias is None
    assert is_instance(model.final_norm, nn.LayerNorm)
    for block in model.blocks:
        attention, mlp = block.attention, block.mlp
        assert attention.qkv_proj.weight.shape == (3 * C, C)
        assert attention.qkv_proj.bias.shape == (3 * C,)
        assert attention.out_proj.weight.shape == (C, C)
        assert attention.out_proj.bias.shape == (C,)
        assert mlp.up_proj.weight.shape == (F, C)
        assert mlp.up_proj.bias.shape == (F,)
        assert mlp.down_proj.weight.shape == (C, F)
        assert mlp.down_proj.bias.shape == (C,)
        assert is_instance(block.attention_norm, nn.LayerNorm)
        assert is_instance(block.mlp_norm, nn.LayerNorm)
    norms = [model.final_norm, *(n for b in model.blocks for n in (b.attention_norm, b.mlp_norm))]
    assert all(norm.eps == 1e-3 for norm in norms)


@pytest.mark.owner("head_split")
def test_logits_have_shape_batch_time_vocab(make_model, make_tokens):
    model = make_model()
    output = model(make_tokens(3, 5))
    assert isinstance(output, tg.CausalLMOutput)
    assert output.logits.shape == (3, 5, model.config.vocab_size)
    assert output.loss is None
    assert output.past_key_values is None


@pytest.mark.owner("tying")
def test_lm_head_weight_is_the_token_embedding_parameter(make_model):
    model = make_model()
    assert object_id(model.lm_head.weight) == object_id(model.token_embedding.weight)


@pytest.mark.owner("tying")
def test_state_dict_holds_both_tied_keys(make_model):
    state = make_model().state_dict()
    assert torch.equal(state["lm_head.weight"], state["token_embedding.weight"])


def _as_float(ids):
    return ids.float()


def _out_of_vocab(ids):
    return ids.clone().fill_(32)


def _negative(ids):
    return ids.clone().fill_(-1)


def _on_another_device(ids):
    """A real second device: a `meta` tensor is no faithful stand-in (docs/contracts.md): a
    value check on it raises RuntimeError first. The meta case is an extension test."""
    others = other_devices(test_device())
    if not others:
        pytest.skip("no second real device on this machine")
    return ids.to(others[0])


@pytest.mark.rejection
@pytest.mark.owner("cache_validation")
@pytest.mark.parametrize(
    "make_bad",
    [
        _as_float,
        lambda ids: ids[0],  # 1-d
        lambda ids: ids[None],  # 3-d
        lambda ids: ids[:, :0],  # T = 0
        lambda ids: ids[:0],  # B = 0
        _out_of_vocab,
        _negative,
        _on_another_device,
    ],
    ids=["float", "1d", "3d", "empty_time", "empty_batch", "out_of_vocab", "negative", "device"],
)
def test_invalid_input_ids_are_rejected(make_model, make_tokens, make_bad):
    model = make_model()
    with pytest.raises(ValueError):
        model(make_bad(make_tokens(2, 4)))


@pytest.mark.owner("registration")
def test_model_moves_to_test_device_with_its_tree(make_model):
    model = make_model()
    devices = {parameter.device.type for parameter in model.parameters()}
    assert devices == {test_device().type}
