"""This project's behaviour beyond the contract: stricter boundary checks, the GELU variant."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from gptlab_testkit import assert_close, candidate, test_device

tg = candidate("TINY_GPT_MODULE")

pytestmark = [pytest.mark.extension]


@pytest.mark.owner("loss_shift")
@pytest.mark.parametrize("bad_labels", ["shape", "float", "out_of_vocab"])
def test_invalid_labels_are_rejected(make_model, make_tokens, bad_labels):
    model = make_model()
    tokens = make_tokens(2, 5)
    labels = {
        "shape": tokens[:, :-1],
        "float": tokens.float(),
        "out_of_vocab": tokens + model.config.vocab_size,
    }[bad_labels]
    with pytest.raises(ValueError, match="labels"):
        model(tokens, labels=labels)


@pytest.mark.owner("eos_context")
@pytest.mark.parametrize(
    "arguments",
    [
        {"max_new_tokens": True},
        {"max_new_tokens": 2.0},
        {"temperature": "hot"},
        {"eos_token_id": 1.0},
        {"generator": 1234},
    ],
    ids=["bool_budget", "float_budget", "str_temperature", "float_eos", "seed_not_generator"],
)
def test_generate_rejects_mistyped_arguments(make_model, make_tokens, arguments):
    model = make_model()
    with pytest.raises(ValueError):
        model.generate(make_tokens(2, 3), **{"max_new_tokens": 2, **arguments})


@pytest.mark.owner("eos_context")
@pytest.mark.parametrize(
    "arguments",
    [
        {"temperature": math.nan},
        {"temperature": math.inf},
        {"eos_token_id": 32},
        {"eos_token_id": -1},
    ],
    ids=["nan_temperature", "inf_temperature", "eos_out_of_vocab", "negative_eos"],
)
def test_generate_rejects_values_the_contract_leaves_open(make_model, make_tokens, arguments):
    """The contract names a negative budget or temperature; a non-finite temperature and an
    EOS id outside the vocabulary are this project's own refusals."""
    model = make_model()
    with pytest.raises(ValueError):
        model.generate(make_tokens(2, 3), **{"max_new_tokens": 2, **arguments})


@pytest.mark.owner("config_validation")
@pytest.mark.parametrize(
    ("field", "value"), [("dropout", None), ("layer_norm_eps", "1e-5")], ids=repr
)
def test_config_rejects_a_rate_that_is_no_number(tiny_sizes, field, value):
    """A rate of the wrong kind (the contract names non-finite and out-of-range rates)."""
    with pytest.raises(ValueError):
        tg.GPTConfig(**{**tiny_sizes, field: value})


@pytest.mark.owner("cache_validation")
def test_cache_errors_name_the_layer_and_field(make_model, make_tokens):
    model = make_model()
    tokens = make_tokens(2, 6)
    past = model(tokens[:, :4], use_cache=True).past_key_values
    bad = (past[0], (past[1][0], past[1][1].double()))
    with pytest.raises(ValueError, match=r"past_key_values\[1\] value.*dtype"):
        model(tokens[:, 4:], past_key_values=bad)


@pytest.mark.owner("cache_immutability")
def test_first_returned_cache_owns_its_memory(make_model, make_tokens):
    """Without a past, key and value are not views into one fused projection output."""
    model = make_model()
    with torch.no_grad():
        past = model(make_tokens(1, 1), use_cache=True).past_key_values
    for key, value in past:
        assert key.untyped_storage().data_ptr() != value.untyped_storage().data_ptr()
    assert past[0][0].device.type == test_device().type


@pytest.mark.owner("config_validation")
@pytest.mark.parametrize("variant", ["exact", "gelu", "", None, True, 1])
def test_config_rejects_unknown_gelu_variant(tiny_sizes, variant):
    with pytest.raises(ValueError, match="gelu_approximate"):
        tg.GPTConfig(**tiny_sizes, gelu_approximate=variant)


@pytest.mark.owner("config_validation")
def test_gelu_variant_is_an_optional_field_after_the_contract_fields(tiny_sizes):
    names = [field.name for field in dataclasses.fields(tg.GPTConfig)]
    assert names[8:] == ["gelu_approximate"]
    assert tg.GPTConfig(**tiny_sizes).gelu_approximate == "none"


def tanh_gelu_by_hand(x: torch.Tensor) -> torch.Tensor:
    """GPT-2's GELU: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    return 0.5 * x * (1.0 + torch.tanh((2.0 / math.pi) ** 0.5 * (x + 0.044715 * x**3)))


@pytest.mark.owner("decoder_forward")
def test_tanh_gelu_variant_runs_the_tanh_approximation(make_model):
    model = make_model(gelu_approximate="tanh")
    mlp = model.blocks[0].mlp
    x = torch.randn(2, 5, model.config.d_model, generator=torch.Generator().manual_seed(2))
    x = x.to(test_device())
    with torch.no_grad():
        hidden = x @ mlp.up_proj.weight.T + mlp.up_proj.bias
        expected = tanh_gelu_by_hand(hidden) @ mlp.down_proj.weight.T + mlp.down_proj.bias
        exact = torch.nn.functional.gelu(hidden) @ mlp.down_proj.weight.T + mlp.down_proj.bias
        output = mlp(x)
    assert_close(output, expected, "tanh-GELU MLP output")
    assert not torch.allclose(output, exact, atol=1e-5, rtol=1e-4)


@pytest.mark.owner("cache_validation")
@pytest.mark.parametrize("where", ["input_ids", "cache"])
def test_meta_tensors_reach_the_device_check(make_model, make_tokens, where):
    """The references check devices before values, so even `meta` (no faithful stand-in for
    another device in the contract tests: a value check on it raises RuntimeError) is a
    ValueError here."""
    model = make_model()
    tokens = make_tokens(2, 6)
    past = model(tokens[:, :4], use_cache=True).past_key_values
    meta_past = tuple((k.to("meta"), v.to("meta")) for k, v in past)
    call = {
        "input_ids": {"input_ids": tokens.to("meta")},
        "cache": {"input_ids": tokens[:, 4:], "past_key_values": meta_past},
    }[where]
    with pytest.raises(ValueError):
        model(**call)


@pytest.mark.owner("config_validation")
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("vocab_size", 0),
        ("n_heads", True),
        ("d_ff", 4.0),
        ("dropout", 1.0),
        ("layer_norm_eps", 0.0),
    ],
)
def test_config_messages_use_the_field_identifier(tiny_sizes, field, value):
    """This project's wording names the field itself (the contract also accepts spaces or
    the value: test_config_rejects_invalid_field)."""
    with pytest.raises(ValueError, match=field):
        tg.GPTConfig(**{**tiny_sizes, field: value})
