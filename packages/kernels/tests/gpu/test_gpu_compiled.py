"""On a GPU: the reference kernels compiled (no interpreter) agree with torch at sizes the
interpreter is too slow for. Skipped, with its reason, where there is no CUDA."""

from __future__ import annotations

import os

import pytest
import torch

from gptlab_kernels import t01, t02, t03

COMPILED = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"

pytestmark = [
    pytest.mark.extension,
    pytest.mark.skipif(not COMPILED, reason="no CUDA device (or TRITON_INTERPRET=1): the "
                       "compiled path runs only on a GPU, bench/gpu_check.sh"),
]  # fmt: skip


@pytest.mark.owner("t01")
@pytest.mark.clause("T01.10")
def test_t01_compiled_at_a_bandwidth_bound_size():
    x, y, out = (torch.randn(1 << 22, device="cuda") for _ in range(3))

    torch.testing.assert_close(t01.axpy(2.0, x, y, out), 2.0 * x + y)


@pytest.mark.owner("t02")
@pytest.mark.clause("T02.9")
def test_t02_compiled_transpose_of_a_large_matrix():
    x = torch.randn(3001, 2049, device="cuda")

    assert torch.equal(t02.transpose(x, torch.empty(2049, 3001, device="cuda")), x.t())


@pytest.mark.owner("t03")
@pytest.mark.clause("T03.9")
def test_t03_compiled_long_rows():
    x = torch.randn(512, 8192, device="cuda")

    got = t03.softmax(x, torch.empty_like(x))

    torch.testing.assert_close(got, torch.softmax(x, -1), rtol=1e-5, atol=1e-5)
