"""ModernLMConfig: frozen, and the kit's M02 config invariants checked at construction.

The kit names positive sizes, `hidden = heads x head_dim` and query heads divisible by kv
heads; this project's further refusals are test_modern_lm_extension.py's.
"""

from __future__ import annotations

import dataclasses

import pytest

from gptlab_testkit.boundary import BAD_VALUE, assert_rejects

pytestmark = [pytest.mark.contract, pytest.mark.owner("modern_config")]

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
