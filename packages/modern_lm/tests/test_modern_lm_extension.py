"""M02 extension: this project's config rules beyond the kit's (tested apart, never scored).

The kit checks sizes positive, `hidden = heads x head_dim` and query heads divisible by kv
heads at construction; a size of the wrong kind, an odd head_dim, a dropout outside
[0, 1), and a rope base or epsilon that is not finite and positive (or a rope base of
exactly 1 kept) are this package's own rules (M02.4, M02.7-M02.9).
"""

from __future__ import annotations

import math

import pytest

from gptlab_testkit.boundary import BAD_VALUE, WRONG_KIND, assert_rejects

pytestmark = [pytest.mark.extension, pytest.mark.owner("modern_config")]

FLOAT32_MAX = 3.4028234663852886e38  # the largest finite float32


@pytest.mark.clause("M02.4")
@pytest.mark.parametrize(
    ("field", "value"),
    [("vocab_size", True), ("num_hidden_layers", 2.0), ("intermediate_size", "40")],
    ids=["bool", "float", "string"],
)
def test_a_size_of_the_wrong_kind_is_rejected(m02, field, value):
    assert_rejects(lambda: m02.config(**{field: value}), WRONG_KIND, field, values=(value,))


@pytest.mark.clause("M02.7")
def test_an_odd_head_dim_is_rejected(m02):
    assert_rejects(
        lambda: m02.config(head_dim=7, hidden_size=28), BAD_VALUE, "head_dim", values=(7,)
    )


@pytest.mark.clause("M02.8")
@pytest.mark.parametrize("dropout", [-0.1, 1.0, 1.5, math.nan])
def test_dropout_outside_zero_one_is_rejected(m02, dropout):
    assert_rejects(lambda: m02.config(dropout=dropout), BAD_VALUE, "dropout", values=(dropout,))


@pytest.mark.clause("M02.9")
@pytest.mark.parametrize("value", [1.0, FLOAT32_MAX], ids=["one", "float32-max"])
def test_a_finite_rope_base_from_one_to_float32_s_largest_is_kept(m02, value):
    """Neither 0, negative, NaN nor infinite, and outside M02.38's open range (0, 1)."""
    assert m02.config(rope_theta=value).rope_theta == value


@pytest.mark.clause("M02.9")
@pytest.mark.parametrize("field", ["rope_theta", "rms_norm_eps"])
@pytest.mark.parametrize("value", [0.0, -2.0, math.nan, math.inf])
def test_a_rope_base_or_epsilon_that_is_not_finite_and_positive_is_rejected(m02, field, value):
    assert_rejects(lambda: m02.config(**{field: value}), BAD_VALUE, field, values=(value,))
