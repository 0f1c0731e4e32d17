"""On a GPU: the reference kernels compiled (no interpreter) agree with torch at sizes the
interpreter is too slow for. Skipped, with its reason, where there is no CUDA."""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

from gptlab_kernels import t01, t02, t03, t04, t05, t06, t07, t08

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


@pytest.mark.owner("t04")
@pytest.mark.clause("T04.5")
def test_t04_compiled_rows_near_the_register_limit():
    x, r = torch.randn(256, 8192, device="cuda"), torch.randn(256, 8192, device="cuda")
    w, out, h = torch.randn(8192, device="cuda"), torch.empty_like(x), torch.empty_like(x)

    t04.fused_add_rmsnorm(x, r, w, 1e-6, out, h)

    torch.testing.assert_close(h, x + r)
    torch.testing.assert_close(out, F.rms_norm(x + r, (8192,), w, 1e-6), rtol=1e-4, atol=1e-4)


@pytest.mark.owner("t05")
@pytest.mark.clause("T05.6")
@pytest.mark.parametrize("M", [1, 16, 2048])
def test_t05_compiled_decode_and_prefill_token_counts(M):
    a = torch.randn(M, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 1024, device="cuda", dtype=torch.float16)

    got = t05.matmul_act(a, b, "silu", torch.empty(M, 1024, device="cuda", dtype=torch.float16))

    torch.testing.assert_close(got, F.silu(a.float() @ b.float()).half(), rtol=2e-3, atol=2e-2)


@pytest.mark.owner("t06")
@pytest.mark.clause("T06.6")
def test_t06_compiled_round_trip_within_half_a_step():
    x = torch.randn(4096, 128, device="cuda")
    q, s = torch.empty(4096, 128, device="cuda", dtype=torch.int8), torch.empty(4096, device="cuda")

    t06.quantize_per_token(x, q, s)
    back = t06.dequantize_per_token(q, s, torch.empty_like(x))

    assert bool(((back - x).abs() <= s[:, None] / 2 + 1e-6).all())


@pytest.mark.owner("t07")
@pytest.mark.clause("T07.5")
def test_t07_compiled_against_sdpa():
    q = torch.randn(8, 32, 1, 128, device="cuda")
    k, v = torch.randn(8, 8, 4096, 128, device="cuda"), torch.randn(8, 8, 4096, 128, device="cuda")
    lengths = torch.full((8,), 4096, device="cuda")

    got = t07.decode_attention(q, k, v, lengths, torch.empty_like(q))

    expected = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.owner("t08")
@pytest.mark.clause("T08.5")
def test_t08_compiled_against_the_gathered_cache():
    page, n = 16, 256  # 4096 tokens a row, pages shuffled
    k, v = (
        torch.randn(8 * n, page, 8, 128, device="cuda"),
        torch.randn(8 * n, page, 8, 128, device="cuda"),
    )
    table = torch.randperm(8 * n, device="cuda").view(8, n)
    q, lengths = (
        torch.randn(8, 32, 1, 128, device="cuda"),
        torch.full((8,), n * page, device="cuda"),
    )

    got = t08.paged_decode_attention(q, k, v, table, lengths, torch.empty_like(q))

    def gathered(cache):  # [B, Hkv, L, D]
        return cache[table].flatten(1, 2).transpose(1, 2)

    expected = F.scaled_dot_product_attention(q, gathered(k), gathered(v), enable_gqa=True)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
