"""T02 add_row_bias(x, bias, out) and transpose(x, out): explicit strides, both tails masked."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.guards import (
    assert_no_load_outside,
    assert_no_store_outside,
    guarded,
    guarded_output,
)
from gptlab_kernels.suite import device, seeded
from gptlab_testkit import assert_close, candidate
from gptlab_testkit.oracles import assert_binds

kernel = candidate("DRILL_T02_MODULE")

pytestmark = [pytest.mark.owner("t02"), pytest.mark.contract]

SHAPES = [(1, 1), (3, 17), (17, 32), (32, 33), (64, 64), (5, 97)]


def bias_case(M, N, x_stride=None, out_stride=None):
    x = guarded("x", seeded(M, N, seed=M * 100 + N), x_stride)
    bias = guarded("bias", seeded(N, seed=N))
    out = guarded_output("out", (M, N), torch.float32, device(), out_stride)
    return x, bias, out


def transpose_case(M, N, x_stride=None, out_stride=None):
    x = guarded("x", seeded(M, N, seed=M * 100 + N), x_stride)
    out = guarded_output("out", (N, M), torch.float32, device(), out_stride)
    return x, out


def bias_checked(x, bias, out, what):
    kernel.add_row_bias(x.view, bias.view, out.view)
    assert_no_store_outside(out, x, bias)
    assert_no_load_outside(lambda: kernel.add_row_bias(x.view, bias.view, out.view), out.view,
                           [x, bias], what)  # fmt: skip
    assert_close(out.view, x.view + bias.view[None, :], what, rtol=1e-6, atol=1e-6)


def transpose_checked(x, out, what):
    kernel.transpose(x.view, out.view)
    assert_no_store_outside(out, x)
    assert torch.equal(out.view, x.view.t()), f"{what}: out is not x transposed"


@pytest.mark.clause("T02.1")
def test_both_signatures_take_their_tensors_positionally_and_return_out():
    x, bias, out = bias_case(3, 5)
    xt, outt = transpose_case(3, 5)

    assert_binds(kernel.add_row_bias, x.view, bias.view, out.view)
    assert_binds(kernel.transpose, xt.view, outt.view)
    got, got_t = (
        kernel.add_row_bias(x.view, bias.view, out.view),
        kernel.transpose(xt.view, outt.view),
    )

    assert_close(got, x.view + bias.view, "add_row_bias's return value")
    assert torch.equal(got_t, xt.view.t()), "transpose's return value"


@pytest.mark.clause("T02.2", "T02.4")
@pytest.mark.parametrize(("M", "N"), SHAPES)
def test_the_bias_is_added_to_every_row_at_every_tail(M, N):
    bias_checked(*bias_case(M, N), f"add_row_bias [{M}, {N}]")


@pytest.mark.clause("T02.3", "T02.4")
@pytest.mark.parametrize(("M", "N"), SHAPES)
def test_the_transpose_is_exact_at_every_tail(M, N):
    transpose_checked(*transpose_case(M, N), f"transpose [{M}, {N}]")


@pytest.mark.clause("T02.4", "T02.5")
@pytest.mark.parametrize(("M", "N"), [(7, 33), (33, 7)])
def test_the_padding_between_a_padded_outs_rows_is_never_written(M, N):
    bias_checked(*bias_case(M, N, out_stride=(N + 9, 1)), f"padded out [{M}, {N}]")
    transpose_checked(*transpose_case(M, N, out_stride=(M + 9, 1)), f"padded out [{N}, {M}]")


@pytest.mark.clause("T02.5")
@pytest.mark.parametrize(("M", "N"), [(5, 97), (33, 17)])
def test_transposed_views_are_read_and_written_where_they_lie(M, N):
    bias_checked(*bias_case(M, N, x_stride=(1, M)), f"transposed x [{M}, {N}]")
    bias_checked(*bias_case(M, N, out_stride=(1, M)), f"transposed out [{M}, {N}]")
    transpose_checked(*transpose_case(M, N, x_stride=(1, M)), f"transpose of x.t() [{M}, {N}]")
    transpose_checked(
        *transpose_case(M, N, out_stride=(1, N)), f"transpose into out.t() [{M}, {N}]"
    )
