"""T03 extension: padded rows, half dtypes, rejections, ledger."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.guards import assert_no_store_outside, guarded, guarded_output
from gptlab_kernels.suite import device, ledger_gaps, seeded
from gptlab_testkit import assert_close, assert_rejects, candidate

kernel = candidate("DRILL_T03_MODULE")

pytestmark = [pytest.mark.owner("t03"), pytest.mark.extension]


@pytest.mark.clause("T03.5")
@pytest.mark.parametrize("N", [7, 100])
def test_padded_rows_are_read_and_written_through_their_stride(N):
    x = guarded("x", seeded(6, N, seed=N), (N + 11, 1))
    out = guarded_output("out", (6, N), torch.float32, device(), (N + 5, 1))

    kernel.softmax(x.view, out.view)

    assert_no_store_outside(out, x)
    assert_close(out.view, torch.softmax(x.view, -1), f"padded rows N={N}", rtol=1e-5, atol=1e-5)


@pytest.mark.clause("T03.5")
@pytest.mark.parametrize(("x_stride", "out_stride"), [((1, 6), (40, 1)), ((40, 1), (1, 6))])
def test_a_transposed_x_or_out_is_read_and_written_through_its_column_stride(x_stride, out_stride):
    x = guarded("x", seeded(6, 33, seed=9), x_stride)
    out = guarded_output("out", (6, 33), torch.float32, device(), out_stride)

    kernel.softmax(x.view, out.view)

    assert_no_store_outside(out, x)
    expected = torch.softmax(x.view, -1)
    assert_close(out.view, expected, f"x strides {x_stride}", rtol=1e-5, atol=1e-5)


@pytest.mark.clause("T03.6")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_rows_reduce_in_fp32(dtype):
    x = guarded("x", seeded(4, 300, seed=5, dtype=dtype, scale=4))
    out = guarded_output("out", (4, 300), dtype, device())

    kernel.softmax(x.view, out.view)

    expected = torch.softmax(x.view.float(), -1).to(dtype).float()
    ulp = 2.0**-10 if dtype == torch.float16 else 2.0**-7
    assert_close(out.view.float(), expected, f"{dtype} softmax", rtol=ulp, atol=1e-6)


@pytest.mark.clause("T03.7")
@pytest.mark.parametrize(
    ("x_shape", "out_shape", "name"),
    [((4,), (4,), "x"), ((3, 0), (3, 0), "x"), ((3, 4), (4, 3), "out")],
)
def test_shapes_that_do_not_fit_are_rejected_naming_the_argument(x_shape, out_shape, name):
    x, out = torch.zeros(x_shape, device=device()), torch.zeros(out_shape, device=device())

    assert_rejects(lambda: kernel.softmax(x, out), ValueError, name)


@pytest.mark.clause("T03.8")
def test_the_ledger_fills_its_eight_fields():
    assert not ledger_gaps(getattr(kernel, "LEDGER", None)), "LEDGER lacks fields"
