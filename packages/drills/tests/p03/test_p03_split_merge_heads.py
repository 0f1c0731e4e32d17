"""P03 split_heads(x, heads) and merge_heads(x): [B, T, C] <-> [B, H, T, D], exact round trip."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_rejects, candidate
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_P03_MODULE")

pytestmark = [pytest.mark.owner("p03"), pytest.mark.contract]


def loop_split(x: torch.Tensor, heads: int) -> torch.Tensor:
    """out[b, h, t, d] = x[b, t, h * D + d], one element at a time."""
    B, T, C = x.shape
    D = C // heads
    out = torch.empty(B, heads, T, D, dtype=x.dtype, device=x.device)
    for b in range(B):
        for h in range(heads):
            for t in range(T):
                for d in range(D):
                    out[b, h, t, d] = x[b, t, h * D + d]
    return out


def loop_merge(x: torch.Tensor) -> torch.Tensor:
    """out[b, t, h * D + d] = x[b, h, t, d], one element at a time."""
    B, H, T, D = x.shape
    out = torch.empty(B, T, H * D, dtype=x.dtype, device=x.device)
    for b in range(B):
        for h in range(H):
            for t in range(T):
                for d in range(D):
                    out[b, t, h * D + d] = x[b, h, t, d]
    return out


@pytest.mark.clause("P03.2", "P03.4")
def test_split_puts_each_block_of_channels_in_its_own_head():
    x = seeded(2, 3, 12, seed=1)

    # the oracle first: the call's writes cannot reach it
    want = loop_split(x, 4)
    got = drill.split_heads(x, 4)

    assert got.shape == (2, 4, 3, 3)
    assert torch.equal(got, want), "split_heads vs element-by-element oracle"


@pytest.mark.clause("P03.2", "P03.5")
def test_merge_puts_each_head_back_in_its_block_of_channels():
    x = seeded(2, 4, 3, 5, seed=2)

    # the oracle first: the call's writes cannot reach it
    want = loop_merge(x)
    got = drill.merge_heads(x)

    assert got.shape == (2, 3, 20)
    assert torch.equal(got, want), "merge_heads vs element-by-element oracle"


@settings(max_examples=20, deadline=None)
@given(
    B=st.integers(1, 3),
    T=st.integers(1, 5),
    H=st.integers(1, 4),
    D=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
@pytest.mark.clause("P03.2", "P03.4", "P03.5")
def test_merge_of_split_is_the_exact_input(B, T, H, D, seed):
    x = seeded(B, T, H * D, seed=seed)

    # the oracle first: the call's writes cannot reach it
    want = loop_split(x, H)
    split = drill.split_heads(x, H)
    assert split.shape == (B, H, T, D)
    assert torch.equal(split, want), "split_heads vs oracle"
    assert torch.equal(drill.merge_heads(split), x), "merge_heads(split_heads(x)) != x"


@pytest.mark.clause("P03.2", "P03.4", "P03.5")
@pytest.mark.parametrize(("B", "T"), [(1, 1), (1, 6), (3, 1)])
def test_batch_of_one_and_single_token_split_and_merge(B, T):
    x = seeded(B, T, 8, seed=3)

    # the oracle first: the call's writes cannot reach it
    want = loop_split(x, 2)
    split = drill.split_heads(x, 2)

    assert torch.equal(split, want), f"split at B={B}, T={T}"
    assert torch.equal(drill.merge_heads(split), x), f"round trip at B={B}, T={T}"


@pytest.mark.clause("P03.4")
def test_split_of_a_token_major_layout_is_a_transpose_not_a_reshape():
    # One head's rows are strided through x: head h at time t starts at t*C + h*D. A
    # split done by reshaping to [B, H, T, D] reads head 0's first row as x[0, 0, :D]
    # and its second row as x[0, 0, D:2D] (the next head's channels of the same token).
    x = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(2, 3, 4)

    # the oracle first: the call's writes cannot reach it
    x_given = x.clone()
    got = drill.split_heads(x, 2)

    assert torch.equal(got[1, 0, 2], x_given[1, 2, 0:2]), "head 0, token 2 of row 1"
    assert torch.equal(got[1, 1, 0], x_given[1, 0, 2:4]), "head 1, token 0 of row 1"


@pytest.mark.clause("P03.5")
def test_merge_accepts_the_non_contiguous_output_of_a_transpose():
    # The split's output is a transposed view: merging must not call view() on it.
    heads_first = seeded(2, 3, 4, 5, seed=4).transpose(1, 2)  # [B, H, T, D], strided

    # the oracle first: the call's writes cannot reach it
    want = loop_merge(heads_first)
    got = drill.merge_heads(heads_first)

    assert torch.equal(got, want), "merge of a strided [B, H, T, D]"


@pytest.mark.clause("P03.5")
@pytest.mark.parametrize("shape", [(1, 2, 3, 4), (2, 4, 5, 3)], ids=str)
def test_merge_of_a_contiguous_head_major_tensor_is_by_value(shape):
    # Attention's output (probs @ v) is a contiguous [B, H, T, D]: its transpose to
    # [B, T, H, D] is strided, so a merge by view() cannot take it.
    heads_major = seeded(*shape, seed=6)

    # the oracle first: the call's writes cannot reach it
    want = loop_merge(heads_major)
    got = drill.merge_heads(heads_major)

    assert torch.equal(got, want), f"merge of a contiguous {shape}"


@pytest.mark.clause("P03.9")
def test_merge_returns_a_contiguous_tensor():
    split = drill.split_heads(seeded(2, 5, 6, seed=5), 3)

    got = drill.merge_heads(split)

    assert got.is_contiguous(), f"merge_heads returned strides {got.stride()}"


@pytest.mark.clause("P03.9")
def test_split_and_merge_leave_their_inputs_unchanged():
    x, y = seeded(2, 3, 6, seed=6), seeded(2, 3, 3, 2, seed=7).transpose(1, 2)

    with inputs_untouched(x=x, y=y):
        drill.split_heads(x, 3)
        drill.merge_heads(y)


@pytest.mark.clause("P03.3", "P03.4", "P03.5")
def test_half_precision_keeps_its_dtype_and_values():
    x = seeded(2, 3, 8, seed=8, dtype=torch.bfloat16)

    # the oracle first: the call's writes cannot reach it
    want = loop_split(x, 4)
    split = drill.split_heads(x, 4)

    assert split.dtype == torch.bfloat16 and torch.equal(split, want)
    assert torch.equal(drill.merge_heads(split), x)


# ---- rejection: valid in every respect but one, before any work ----


@pytest.mark.clause("P03.6")
@pytest.mark.parametrize(("C", "heads"), [(10, 3), (12, 5), (6, 4)])
def test_channels_not_divisible_by_heads_are_rejected(C, heads):
    x = seeded(2, 3, C, seed=9)
    with inputs_untouched(x=x):
        assert_rejects(lambda: drill.split_heads(x, heads), ValueError, ("heads", "x"))


@pytest.mark.clause("P03.3")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64], ids=str)
def test_both_keep_the_dtype_and_device(dtype):
    x = seeded(2, 3, 6, seed=15).mul(10).to(dtype)

    # the oracle first: the call's writes cannot reach it
    x_given = x.clone()
    split = drill.split_heads(x, 3)
    merged = drill.merge_heads(split)

    for name, got in (("split_heads", split), ("merge_heads", merged)):
        assert got.dtype == dtype, f"{name} returned {got.dtype} for {dtype}"
        assert got.device == x.device, f"{name} moved x to {got.device}"
    assert torch.equal(merged, x_given)


@pytest.mark.clause("P03.1")
def test_both_take_their_arguments_positionally():
    x = seeded(1, 2, 4, seed=16)

    assert_binds(drill.split_heads, x, 2)
    assert_binds(drill.merge_heads, x.view(1, 2, 2, 2))
    assert torch.equal(drill.merge_heads(drill.split_heads(x, 2)), x)


@pytest.mark.clause("P03.9")
@pytest.mark.parametrize(("H", "T"), [(4, 3), (1, 3), (4, 1)])
def test_merge_is_contiguous_for_every_head_count_and_length(H, T):
    x = seeded(2, T, H * 2, seed=17)

    got = drill.merge_heads(drill.split_heads(x, H))

    assert got.shape == (2, T, H * 2) and got.is_contiguous(), f"strides {got.stride()}"
