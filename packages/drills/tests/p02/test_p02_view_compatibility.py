"""P02 can_view_without_copy(x, new_shape) agrees with whether x.view(new_shape) is legal."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched

drill = candidate("DRILL_P02_MODULE")

pytestmark = [pytest.mark.owner("p02"), pytest.mark.contract]


def view_is_legal(x: torch.Tensor, new_shape) -> bool:
    """The oracle: ask torch itself."""
    try:
        x.view(tuple(new_shape))
    except RuntimeError:
        return False
    return True


def agrees(x: torch.Tensor, new_shape, what: str) -> bool:
    got = drill.can_view_without_copy(x, new_shape)
    want = view_is_legal(x, new_shape)
    assert isinstance(got, bool), f"{what}: returned {type(got).__name__}, not bool"
    assert got == want, (
        f"{what}: said {got} for shape {tuple(x.shape)} stride {x.stride()} "
        f"-> {tuple(new_shape)}, view() says {want}"
    )
    return got


def grid(*shape: int) -> torch.Tensor:
    return torch.arange(math.prod(shape), dtype=torch.float32, device=test_device()).reshape(shape)


@pytest.mark.clause("P02.2", "P02.3")
def test_flatten_and_unflatten_of_a_contiguous_tensor_are_views():
    x = grid(2, 3, 4)

    assert agrees(x, (24,), "flatten")
    assert agrees(x, (6, 4), "merge the leading dims")
    assert agrees(x, (2, 3, 2, 2), "split the last dim")


@pytest.mark.clause("P02.3")
def test_flattening_a_transpose_needs_a_copy():
    x = grid(3, 4).t()

    assert not agrees(x, (12,), "flatten of a transpose")
    assert not agrees(grid(2, 3, 4).transpose(1, 2), (2, 12), "merge of transposed dims")


@pytest.mark.clause("P02.3")
def test_splitting_one_dim_of_a_transpose_is_still_a_view():
    x = grid(3, 4).t()  # [4, 3], strides (1, 4)

    assert agrees(x, (2, 2, 3), "split dim 0 of a transpose")
    assert agrees(grid(2, 3, 4).transpose(0, 1), (3, 2, 2, 2), "split the last dim")


@pytest.mark.clause("P02.4")
def test_size_one_dims_come_and_go_freely():
    x = grid(3, 4).t()

    assert agrees(x, (4, 1, 3), "insert a size-one dim")
    assert agrees(x.unsqueeze(0), (4, 3), "drop a size-one dim")
    odd = grid(12).as_strided((3, 1, 4), (4, 100, 1))  # size-one dim with a stray stride
    assert agrees(odd, (12,), "flatten across a size-one dim with stride 100")


@pytest.mark.clause("P02.4")
def test_a_transpose_that_only_moves_a_size_one_dim_keeps_every_view():
    x = grid(1, 4, 3).transpose(0, 1)  # [4, 1, 3], strides (3, 12, 1): memory order unchanged

    assert agrees(x, (12,), "flatten after moving a size-one dim")
    assert agrees(grid(1, 2, 6).transpose(0, 1), (3, 4), "regroup after moving a size-one dim")


@pytest.mark.clause("P02.3", "P02.4")
def test_an_offset_does_not_matter_but_a_row_gap_does():
    x = grid(4, 6)

    assert agrees(x[1:3], (12,), "rows 1..2: contiguous at an offset")
    assert not agrees(x[:, 2:5], (12,), "columns 2..4: rows are 6 apart, not 3")
    assert agrees(x[:, 2:5], (4, 3, 1), "columns 2..4 with a new size-one dim")


@pytest.mark.clause("P02.4")
def test_views_at_an_offset_follow_the_same_rule():
    x = grid(3, 4, 5)

    assert agrees(x[1], (20,), "flatten of the second block")
    assert agrees(x[1:, 1:].transpose(0, 1), (3, 2, 5), "split at an offset")
    assert not agrees(x[1:, 1:], (30,), "flatten across a gap at an offset")
    assert agrees(x[2:, :, 2:], (1, 4, 3, 1), "size-one dims at an offset")


@pytest.mark.clause("P02.3")
def test_a_step_slice_is_one_strided_chunk():
    x = grid(4, 6)[:, ::2]  # [4, 3], strides (6, 2): rows chain, 6 == 2 * 3

    assert agrees(x, (12,), "flatten of an every-other-column slice")
    assert not agrees(grid(4, 6)[::2, ::3], (4,), "rows 12 apart, columns 3 apart")


@pytest.mark.clause("P02.5")
def test_an_expanded_tensor_splits_but_does_not_flatten():
    x = grid(1, 4).expand(3, 4)  # strides (0, 1)

    assert not agrees(x, (12,), "flatten of a broadcast")
    assert agrees(x, (3, 2, 2), "split the real dim of a broadcast")


@pytest.mark.clause("P02.5")
def test_after_contiguous_every_reshape_is_a_view():
    x = grid(2, 3, 4).permute(2, 0, 1).contiguous()

    assert agrees(x, (24,), "flatten after contiguous()")
    assert agrees(x, (8, 3), "merge after contiguous()")


@pytest.mark.clause("P02.1")
def test_a_list_or_torch_size_is_accepted_as_new_shape():
    x = grid(3, 4)

    assert agrees(x, [2, 6], "list")
    assert agrees(x, torch.Size([12]), "torch.Size")


@st.composite
def strided_tensors(draw):
    """A small tensor reached by permutes, steps, narrows and expands of a fresh one."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4), label="shape")
    x = grid(*shape)
    for _ in range(draw(st.integers(0, 3), label="views")):
        dim = draw(st.integers(0, x.dim() - 1))
        kind = draw(st.sampled_from(["transpose", "step", "narrow", "expand", "unsqueeze"]))
        if kind == "transpose":
            x = x.transpose(dim, draw(st.integers(0, x.dim() - 1)))
        elif kind == "step":
            x = x[(slice(None),) * dim + (slice(None, None, 2),)]
        elif kind == "narrow" and x.shape[dim] > 1:
            x = x.narrow(dim, 1, x.shape[dim] - 1)
        elif kind == "expand" and x.shape[dim] == 1:
            x = x.expand(*x.shape[:dim], 3, *x.shape[dim + 1 :])
        elif kind == "unsqueeze":
            x = x.unsqueeze(dim)
    return x


@st.composite
def factorizations(draw, numel: int):
    """An ordered factorization of numel, with size-one dims sprinkled in."""
    sizes, rest = [], numel
    while rest > 1:
        divisors = [d for d in range(2, rest + 1) if rest % d == 0]
        d = draw(st.sampled_from(divisors))
        sizes.append(d)
        rest //= d
    for _ in range(draw(st.integers(0, 2))):
        sizes.insert(draw(st.integers(0, len(sizes))), 1)
    return sizes or [1]


@pytest.mark.clause("P02.3", "P02.4", "P02.5")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_view_chain_and_target_shape_agree_with_view(data):
    x = data.draw(strided_tensors(), label="x")
    new_shape = data.draw(factorizations(x.numel()), label="new_shape")

    agrees(x, new_shape, "random")


@pytest.mark.clause("P02.9")
def test_the_tensor_is_left_unchanged():
    x = grid(3, 4).t()
    with inputs_untouched(x=x):
        drill.can_view_without_copy(x, (2, 6))


@pytest.mark.clause("P02.1")
def test_x_and_new_shape_are_positional():
    x = grid(3, 4)

    assert_binds(drill.can_view_without_copy, x, (12,))
    assert agrees(x, (12,), "positional call")
