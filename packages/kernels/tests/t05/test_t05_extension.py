"""T05 extension: every operand through its own strides, bf16 tiles, empty sizes,
rejections, ledger."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gptlab_kernels.guards import assert_no_store_outside, guarded, guarded_output
from gptlab_kernels.suite import device, ledger_gaps, seeded
from gptlab_testkit import assert_close, assert_rejects, candidate

kernel = candidate("DRILL_T05_MODULE")

pytestmark = [pytest.mark.owner("t05"), pytest.mark.extension]


@pytest.mark.clause("T05.7")
@pytest.mark.parametrize(("a_stride", "b_stride", "out_stride"),
                         [((1, 40), (1, 45), (50, 2)), ((60, 3), (100, 2), (1, 37))])  # fmt: skip
def test_transposed_and_padded_operands_are_read_through_their_own_strides(
    a_stride, b_stride, out_stride
):
    M, N, K = 35, 20, 41  # a [M, K], b [K, N] (b given as W.t(), the nn.Linear layout)
    a = guarded("a", seeded(M, K, seed=1), a_stride)
    b = guarded("b", seeded(K, N, seed=2), b_stride)
    out = guarded_output("out", (M, N), torch.float32, device(), out_stride)

    kernel.matmul_act(a.view, b.view, "silu", out.view)

    assert_no_store_outside(out, a, b)
    expected = F.silu(a.view.double() @ b.view.double())
    assert_close(out.view.double(), expected, f"strides {a_stride}, {b_stride}", rtol=1e-5,
                 atol=1e-4)  # fmt: skip


@pytest.mark.clause("T05.8")
def test_bf16_operands_are_accumulated_in_fp32_and_rounded_once():
    a = seeded(20, 70, seed=5, dtype=torch.bfloat16)
    b = seeded(70, 12, seed=6, dtype=torch.bfloat16)
    out = torch.empty(20, 12, dtype=torch.bfloat16, device=device())

    kernel.matmul_act(a, b, "gelu", out)

    expected = F.gelu(a.double() @ b.double())
    # within two bf16 steps: the interpreter rounds fp32 to bf16 its own way
    assert_close(out.double(), expected, "bf16 gelu", rtol=2.0**-6, atol=2.0**-8)


@pytest.mark.clause("T05.9")
@pytest.mark.parametrize("activation", ["none", "silu", "gelu"])
def test_k_zero_writes_the_activation_of_zero(activation):
    out = torch.full((3, 4), 5.0, device=device())

    kernel.matmul_act(torch.empty(3, 0, device=device()), torch.empty(0, 4, device=device()),
                      activation, out)  # fmt: skip

    assert torch.equal(out, torch.zeros(3, 4, device=device())), f"got {out}"


@pytest.mark.clause("T05.9")
@pytest.mark.parametrize(
    ("a_shape", "b_shape", "out_shape", "activation", "name"),
    [
        ((3,), (3, 2), (3, 2), "none", "a"),
        ((3, 4), (5, 2), (3, 2), "none", "b"),
        ((3, 4), (4, 2), (2, 3), "none", "out"),
        ((3, 4), (4, 2), (3, 2), "relu", "activation"),
    ],
)
def test_operands_that_do_not_fit_are_rejected_naming_them(a_shape, b_shape, out_shape,
                                                           activation, name):  # fmt: skip
    a, b, out = (torch.zeros(s, device=device()) for s in (a_shape, b_shape, out_shape))

    assert_rejects(lambda: kernel.matmul_act(a, b, activation, out), ValueError, name)


@pytest.mark.clause("T05.9")
def test_operands_of_two_dtypes_are_rejected_naming_b():
    a, b = torch.zeros(3, 4, device=device()), torch.zeros(4, 2, device=device()).half()

    assert_rejects(lambda: kernel.matmul_act(a, b, "none", torch.zeros(3, 2)), ValueError, "b")


@pytest.mark.clause("T05.10")
def test_the_ledger_fills_its_eight_fields():
    assert not ledger_gaps(getattr(kernel, "LEDGER", None)), "LEDGER lacks fields"
