"""ModernLMConfig: frozen, and every invariant of the kit's M02 config checked at construction."""

from __future__ import annotations

import dataclasses

import pytest

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


def test_a_valid_config_keeps_its_fields_and_is_frozen(m02):
    config = m02.config(dropout=0.25, tie_word_embeddings=True)
    assert config.hidden_size == 32 and config.num_key_value_heads == 2
    assert config.dropout == 0.25 and config.tie_word_embeddings is True
    with pytest.raises(AttributeError):
        config.hidden_size = 64


def test_defaults_are_llama_s(m02):
    sizes = {name: getattr(m02.config(), name) for name in SIZE_FIELDS}
    config = type(m02.config())(**sizes)
    assert (config.rope_theta, config.dropout, config.tie_word_embeddings) == (10000.0, 0.0, False)
    assert config.rms_norm_eps > 0


@pytest.mark.parametrize("field", SIZE_FIELDS)
@pytest.mark.parametrize("value", [0, -4])
def test_a_size_that_is_not_positive_is_rejected(m02, field, value):
    with pytest.raises(ValueError):
        m02.config(**{field: value})


def test_hidden_size_must_be_heads_times_head_dim(m02):
    with pytest.raises(ValueError):
        m02.config(hidden_size=36)  # 4 heads x 8 = 32
    with pytest.raises(ValueError):
        m02.config(head_dim=4)


@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 3), (6, 4), (2, 4)])
def test_query_heads_must_be_divisible_by_kv_heads(m02, heads, kv_heads):
    with pytest.raises(ValueError):
        m02.config(num_attention_heads=heads, num_key_value_heads=kv_heads, hidden_size=heads * 8)


def test_replace_checks_again(m02):
    config = m02.config()
    with pytest.raises(ValueError):
        dataclasses.replace(config, num_key_value_heads=3)


def test_an_odd_head_dim_is_rejected(m02):
    with pytest.raises(ValueError):
        m02.config(head_dim=7, hidden_size=28)


@pytest.mark.parametrize("dropout", [-0.1, 1.0, 1.5])
def test_dropout_outside_zero_one_is_rejected(m02, dropout):
    with pytest.raises(ValueError):
        m02.config(dropout=dropout)
