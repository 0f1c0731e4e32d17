"""T02 extension: half dtypes, rejections, ledger."""

from __future__ import annotations

import pytest
import torch

from gptlab_kernels.guards import assert_no_store_outside, guarded, guarded_output
from gptlab_kernels.suite import device, ledger_gaps, seeded
from gptlab_testkit import assert_close, assert_rejects, candidate

kernel = candidate("DRILL_T02_MODULE")

pytestmark = [pytest.mark.owner("t02"), pytest.mark.extension]


@pytest.mark.clause("T02.6")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_transpose_copies_bits_and_the_bias_add_is_rounded_once(dtype):
    x = guarded("x", seeded(9, 40, seed=1, dtype=dtype))
    bias = guarded("bias", seeded(40, seed=2, dtype=dtype))
    out = guarded_output("out", (9, 40), dtype, device())
    out_t = guarded_output("out", (40, 9), dtype, device())

    kernel.add_row_bias(x.view, bias.view, out.view)
    kernel.transpose(x.view, out_t.view)

    assert_no_store_outside(out, out_t)
    assert torch.equal(out_t.view, x.view.t())
    ulp = 0.0 if dtype == torch.float16 else 2.0**-7  # the interpreter's own bf16 rounding
    expected = (x.view.float() + bias.view.float()).to(dtype).float()
    assert_close(out.view.float(), expected, f"{dtype} bias add", rtol=ulp, atol=0)


@pytest.mark.clause("T02.7")
@pytest.mark.parametrize(("bias_shape", "out_shape", "name"),
                         [((6,), (4, 5), "bias"), ((5,), (5, 4), "out")])  # fmt: skip
def test_a_bias_or_out_that_does_not_fit_is_rejected_naming_it(bias_shape, out_shape, name):
    x = torch.zeros(4, 5, device=device())

    assert_rejects(lambda: kernel.add_row_bias(x, torch.zeros(bias_shape), torch.zeros(out_shape)),
                   ValueError, name)  # fmt: skip


@pytest.mark.clause("T02.7")
def test_a_transpose_into_an_out_of_xs_shape_is_rejected_naming_out():
    x = torch.zeros(4, 5, device=device())

    assert_rejects(
        lambda: kernel.transpose(x, torch.zeros(4, 5, device=device())), ValueError, "out"
    )


@pytest.mark.clause("T02.8")
def test_the_ledger_fills_its_eight_fields():
    assert not ledger_gaps(getattr(kernel, "LEDGER", None)), "LEDGER lacks fields"
