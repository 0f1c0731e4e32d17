"""P04 repeat_kv_for_gqa(kv, query_heads): [B, Hkv, T, D] -> [B, Hq, T, D], head h reads
kv head h // (Hq // Hkv)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_rejects, candidate
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_P04_MODULE")

pytestmark = [pytest.mark.owner("p04"), pytest.mark.contract]


def loop_expand(kv: torch.Tensor, query_heads: int) -> torch.Tensor:
    """out[:, h] = kv[:, h // group], one head at a time."""
    group = query_heads // kv.shape[1]
    return torch.stack([kv[:, h // group] for h in range(query_heads)], dim=1)


@pytest.mark.clause("P04.2", "P04.4")
@pytest.mark.parametrize("ratio", [1, 4, 8])
def test_each_ratio_gives_every_query_head_its_kv_head(ratio):
    kv = seeded(2, 2, 3, 4, seed=ratio)

    # the oracle first: the call's writes cannot reach it
    want = loop_expand(kv, 2 * ratio)
    got = drill.repeat_kv_for_gqa(kv, 2 * ratio)

    assert got.shape == (2, 2 * ratio, 3, 4)
    assert torch.equal(got, want), f"ratio {ratio} vs head-by-head oracle"


@pytest.mark.clause("P04.4")
def test_the_expansion_equals_repeat_interleave_on_the_head_axis():
    kv = seeded(3, 3, 5, 2, seed=11)

    # the oracle first: the call's writes cannot reach it
    want = kv.repeat_interleave(4, dim=1)
    got = drill.repeat_kv_for_gqa(kv, 12)

    assert torch.equal(got, want), "vs repeat_interleave(4, dim=1)"


@pytest.mark.clause("P04.4")
def test_neighbouring_query_heads_share_a_kv_head_not_every_hkv_th():
    # Hkv=2, Hq=4: heads 0, 1 read kv head 0 and heads 2, 3 read kv head 1 (not 0, 1, 0, 1).
    kv = torch.stack([torch.zeros(1, 2, 3), torch.ones(1, 2, 3)], dim=1)  # [1, 2, 2, 3]

    got = drill.repeat_kv_for_gqa(kv, 4)

    heads = [int(got[0, h, 0, 0]) for h in range(4)]
    assert heads == [0, 0, 1, 1], f"query heads read kv heads {heads}"


@settings(max_examples=20, deadline=None)
@given(
    B=st.integers(1, 3),
    Hkv=st.integers(1, 4),
    group=st.integers(1, 4),
    T=st.integers(1, 4),
    D=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
@pytest.mark.clause("P04.2", "P04.4")
def test_any_small_shape_matches_the_oracle(B, Hkv, group, T, D, seed):
    kv = seeded(B, Hkv, T, D, seed=seed)

    # the oracle first: the call's writes cannot reach it
    want = loop_expand(kv, Hkv * group)
    got = drill.repeat_kv_for_gqa(kv, Hkv * group)

    assert torch.equal(got, want), "vs head-by-head oracle"


@pytest.mark.clause("P04.3")
def test_half_precision_keeps_its_dtype():
    kv = seeded(2, 2, 3, 4, seed=12, dtype=torch.bfloat16)

    # the oracle first: the call's writes cannot reach it
    want = loop_expand(kv, 8)
    got = drill.repeat_kv_for_gqa(kv, 8)

    assert got.dtype == torch.bfloat16 and torch.equal(got, want)


@pytest.mark.clause("P04.5")
def test_a_strided_kv_is_expanded_by_value():
    kv = seeded(2, 3, 4, 2, seed=13).transpose(1, 2)  # [2, 4, 3, 2], not contiguous

    # the oracle first: the call's writes cannot reach it
    want = loop_expand(kv, 8)
    got = drill.repeat_kv_for_gqa(kv, 8)

    assert torch.equal(got, want), "expansion of a transposed kv"


@pytest.mark.clause("P04.9")
def test_kv_is_not_written():
    kv = seeded(2, 2, 3, 4, seed=14)
    with inputs_untouched(kv=kv):
        drill.repeat_kv_for_gqa(kv, 8)
        drill.repeat_kv_for_gqa(kv, 2)


# ---- rejection: valid in every respect but one, before any work ----


@pytest.mark.clause("P04.6")
@pytest.mark.parametrize(("kv_heads", "query_heads"), [(4, 6), (3, 4), (2, 1)])
def test_query_heads_not_a_multiple_of_kv_heads_are_rejected(kv_heads, query_heads):
    kv = seeded(2, kv_heads, 3, 4, seed=15)
    with inputs_untouched(kv=kv):
        assert_rejects(
            lambda: drill.repeat_kv_for_gqa(kv, query_heads), ValueError, ("query_heads", "kv")
        )


@pytest.mark.clause("P04.2", "P04.3")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64], ids=str)
@pytest.mark.parametrize("ratio", [1, 4])
def test_the_result_keeps_dtype_and_device_at_every_ratio(dtype, ratio):
    kv = seeded(1, 2, 1, 3, seed=20).mul(10).to(dtype)

    # the oracle first: the call's writes cannot reach it
    want = kv.repeat_interleave(ratio, dim=1)
    got = drill.repeat_kv_for_gqa(kv, 2 * ratio)

    assert got.shape == (1, 2 * ratio, 1, 3), f"shape {tuple(got.shape)}"
    assert got.dtype == dtype and got.device == kv.device, f"{got.dtype} on {got.device}"
    assert torch.equal(got, want)


@pytest.mark.clause("P04.1")
def test_kv_and_query_heads_are_positional():
    kv = seeded(1, 2, 2, 2, seed=21)

    assert_binds(drill.repeat_kv_for_gqa, kv, 4)
    assert torch.equal(drill.repeat_kv_for_gqa(kv, 4), loop_expand(kv, 4))


@pytest.mark.clause("P04.5")
@pytest.mark.parametrize("view", ["every other head", "transposed T and D", "broadcast T"])
def test_a_sliced_or_broadcast_kv_is_expanded_by_value(view):
    base = seeded(2, 4, 3, 4, seed=22)
    kv = {
        "every other head": base[:, ::2],
        "transposed T and D": base[:, :2].transpose(2, 3),
        "broadcast T": base[:, :2, :1].expand(2, 2, 3, 4),
    }[view]

    # the oracle first: the call's writes cannot reach it
    want = loop_expand(kv.contiguous(), 4)
    got = drill.repeat_kv_for_gqa(kv, 4)

    assert torch.equal(got, want), f"expansion of a {view} kv"
