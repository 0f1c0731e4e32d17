"""T07 extension: half inputs, strided caches and queries, rejections, ledger."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gptlab_kernels.guards import assert_no_store_outside, guarded, guarded_output
from gptlab_kernels.suite import device, ledger_gaps, seeded
from gptlab_testkit import assert_close, assert_rejects, candidate

kernel = candidate("DRILL_T07_MODULE")

pytestmark = [pytest.mark.owner("t07"), pytest.mark.extension]


def oracle(q, k_cache, v_cache, lengths):
    group = q.shape[1] // k_cache.shape[1]
    rows = []
    for b, length in enumerate(lengths.tolist()):
        k = k_cache[b, :, :length].double().repeat_interleave(group, 0)
        v = v_cache[b, :, :length].double().repeat_interleave(group, 0)
        rows.append(F.scaled_dot_product_attention(q[b].double(), k, v))
    return torch.stack(rows)


@pytest.mark.clause("T07.6")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs_are_computed_in_fp32_and_rounded_once(dtype):
    lengths = torch.tensor([30, 7], device=device())
    q = seeded(2, 4, 1, 32, seed=1, dtype=dtype)
    k, v = seeded(2, 2, 30, 32, seed=2, dtype=dtype), seeded(2, 2, 30, 32, seed=3, dtype=dtype)
    out = torch.empty_like(q)

    kernel.decode_attention(q, k, v, lengths, out)

    ulp = 2.0**-10 if dtype == torch.float16 else 2.0**-7
    assert_close(out.double(), oracle(q, k, v, lengths), f"{dtype}", rtol=2 * ulp, atol=2 * ulp)


@pytest.mark.clause("T07.7")
def test_seq_major_caches_and_transposed_queries_are_read_through_their_strides():
    B, Hq, Hkv, S, D = 2, 4, 2, 20, 16
    lengths = torch.tensor([20, 11], device=device())
    # caches laid out [B, S, Hkv, D] with a padded row, seen as [B, Hkv, S, D]; q [B, 1, Hq, D]
    k = guarded("k_cache", seeded(B, Hkv, S, D, seed=1), (S * Hkv * D + 8, D, Hkv * D, 1))
    v = guarded("v_cache", seeded(B, Hkv, S, D, seed=2), (Hkv * S * D + 24, S * D + 3, D, 1))
    q = guarded("q", seeded(B, Hq, 1, D, seed=3), (Hq * D + 5, D, D, 1))
    out = guarded_output("out", (B, Hq, 1, D), torch.float32, device(), (Hq * 2 * D, 2 * D, D, 1))

    kernel.decode_attention(q.view, k.view, v.view, lengths, out.view)

    assert_no_store_outside(out, q, k, v)
    expected = oracle(q.view, k.view, v.view, lengths)
    assert_close(out.view.double(), expected, "strided", rtol=1e-5, atol=1e-5)


@pytest.mark.clause("T07.8")
@pytest.mark.parametrize(
    ("q_shape", "kv_shape", "lengths", "name"),
    [
        ((2, 4, 1, 8), (2, 2, 5, 8), [0, 3], "lengths"),
        ((2, 4, 1, 8), (2, 2, 5, 8), [6, 3], "lengths"),
        ((2, 4, 1, 8), (2, 3, 5, 8), [2, 3], "k_cache"),
        ((2, 4, 2, 8), (2, 2, 5, 8), [2, 3], "q"),
        ((2, 4, 1, 8), (2, 2, 5, 4), [2, 3], "k_cache"),
    ],
)
def test_shapes_and_lengths_that_do_not_fit_are_rejected_naming_them(q_shape, kv_shape, lengths,
                                                                     name):  # fmt: skip
    q, out = torch.zeros(q_shape, device=device()), torch.zeros(q_shape, device=device())
    k, v = torch.zeros(kv_shape, device=device()), torch.zeros(kv_shape, device=device())
    lengths = torch.tensor(lengths, device=device())

    assert_rejects(lambda: kernel.decode_attention(q, k, v, lengths, out), ValueError, name)


@pytest.mark.clause("T07.8")
def test_a_head_dim_that_is_not_contiguous_is_rejected_naming_the_tensor():
    q = torch.zeros(1, 2, 1, 8, device=device())
    k = torch.zeros(1, 2, 5, 16, device=device())[..., ::2]

    assert_rejects(lambda: kernel.decode_attention(q, k, k, torch.tensor([2]), q.clone()),
                   ValueError, "k_cache")  # fmt: skip


@pytest.mark.clause("T07.9")
def test_the_ledger_fills_its_eight_fields():
    assert not ledger_gaps(getattr(kernel, "LEDGER", None)), "LEDGER lacks fields"
