"""ModernLMConfig: frozen, and every invariant of the kit's M02 config checked at construction."""

from __future__ import annotations

import dataclasses
import math

import pytest

from gptlab_testkit.boundary import BAD_VALUE, WRONG_KIND, assert_rejects

pytestmark = [pytest.mark.contract, pytest.mark.owner("modern_config")]

FLOAT32_MAX = 3.4028234663852886e38  # the largest finite float32

SIZE_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "max_position_embeddings",
)


@pytest.mark.clause("M02.1", "M02.2")
def test_a_valid_config_keeps_its_fields_and_is_frozen(m02):
    config = m02.config(dropout=0.25, tie_word_embeddings=True)
    assert config.hidden_size == 32 and config.num_key_value_heads == 2
    assert config.dropout == 0.25 and config.tie_word_embeddings is True
    assert (config.rope_theta, config.rms_norm_eps) == (100.0, 0.05)
    with pytest.raises(AttributeError):
        config.hidden_size = 64
    assert config.hidden_size == 32


@pytest.mark.clause("M02.1")
def test_defaults_are_llama_s(m02):
    sizes = {name: getattr(m02.config(), name) for name in SIZE_FIELDS}
    config = type(m02.config())(**sizes)
    assert (config.rope_theta, config.dropout, config.tie_word_embeddings) == (10000.0, 0.0, False)
    assert 0 < config.rms_norm_eps < 1e-3


@pytest.mark.clause("M02.3")
@pytest.mark.parametrize("field", SIZE_FIELDS)
@pytest.mark.parametrize("value", [0, -4])
def test_a_size_that_is_not_positive_is_rejected(m02, field, value):
    assert_rejects(lambda: m02.config(**{field: value}), BAD_VALUE, field, values=(value,))


@pytest.mark.clause("M02.3")
def test_replace_checks_a_size_again(m02):
    config = m02.config()
    assert_rejects(
        lambda: dataclasses.replace(config, num_hidden_layers=0),
        BAD_VALUE,
        "num_hidden_layers",
        values=(0,),
    )


@pytest.mark.clause("M02.4")
@pytest.mark.parametrize(
    ("field", "value"),
    [("vocab_size", True), ("num_hidden_layers", 2.0), ("intermediate_size", "40")],
    ids=["bool", "float", "string"],
)
def test_a_size_of_the_wrong_kind_is_rejected(m02, field, value):
    assert_rejects(lambda: m02.config(**{field: value}), WRONG_KIND, field, values=(value,))


@pytest.mark.clause("M02.5")
def test_hidden_size_must_be_heads_times_head_dim(m02):
    names = ("hidden_size", "num_attention_heads", "head_dim")
    assert_rejects(lambda: m02.config(hidden_size=36), BAD_VALUE, names, values=(36,))  # 4 x 8
    assert_rejects(lambda: m02.config(head_dim=4), BAD_VALUE, names, values=(4,))


@pytest.mark.clause("M02.6")
@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 3), (6, 4), (2, 4)])
def test_query_heads_must_be_divisible_by_kv_heads(m02, heads, kv_heads):
    assert_rejects(
        lambda: m02.config(
            num_attention_heads=heads, num_key_value_heads=kv_heads, hidden_size=heads * 8
        ),
        BAD_VALUE,
        ("num_attention_heads", "num_key_value_heads"),
        values=(heads, kv_heads),
    )


@pytest.mark.clause("M02.6")
def test_replace_checks_again(m02):
    config = m02.config()
    assert_rejects(
        lambda: dataclasses.replace(config, num_key_value_heads=3),
        BAD_VALUE,
        ("num_attention_heads", "num_key_value_heads"),
        values=(3,),
    )


@pytest.mark.clause("M02.7")
def test_an_odd_head_dim_is_rejected(m02):
    assert_rejects(
        lambda: m02.config(head_dim=7, hidden_size=28), BAD_VALUE, "head_dim", values=(7,)
    )


@pytest.mark.clause("M02.8")
@pytest.mark.parametrize("dropout", [-0.1, 1.0, 1.5, math.nan])
def test_dropout_outside_zero_one_is_rejected(m02, dropout):
    assert_rejects(lambda: m02.config(dropout=dropout), BAD_VALUE, "dropout", values=(dropout,))


@pytest.mark.clause("M02.1", "M02.9")
@pytest.mark.parametrize("value", [1.0, FLOAT32_MAX], ids=["one", "float32-max"])
def test_a_finite_rope_base_from_one_to_float32_s_largest_is_kept(m02, value):
    """Neither 0, negative, NaN nor infinite, and outside M02.38's open range (0, 1)."""
    assert m02.config(rope_theta=value).rope_theta == value


@pytest.mark.clause("M02.9")
@pytest.mark.parametrize("field", ["rope_theta", "rms_norm_eps"])
@pytest.mark.parametrize("value", [0.0, -2.0, math.nan, math.inf])
def test_a_rope_base_or_epsilon_that_is_not_finite_and_positive_is_rejected(m02, field, value):
    assert_rejects(lambda: m02.config(**{field: value}), BAD_VALUE, field, values=(value,))
