"""T07 decode_attention(q, k_cache, v_cache, lengths, out): one query token per row over its
contiguous cache (P19's shapes and rules), the query heads of one KV head grouped."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gptlab_kernels.guards import (
    assert_no_load_outside,
    assert_no_store_outside,
    guarded,
    guarded_output,
)
from gptlab_kernels.suite import device, seeded
from gptlab_testkit import assert_close, candidate
from gptlab_testkit.oracles import assert_binds

kernel = candidate("DRILL_T07_MODULE")

pytestmark = [pytest.mark.owner("t07"), pytest.mark.contract]


def oracle(q, k_cache, v_cache, lengths):
    """SDPA in float64 over each row's first lengths[b] slots, K/V repeated over the group."""
    group = q.shape[1] // k_cache.shape[1]
    rows = []
    for b, length in enumerate(lengths.tolist()):
        k = k_cache[b, :, :length].double().repeat_interleave(group, 0)
        v = v_cache[b, :, :length].double().repeat_interleave(group, 0)
        rows.append(F.scaled_dot_product_attention(q[b].double(), k, v))
    return torch.stack(rows)


def caches(B, Hkv, S, D, lengths, seed, scale=1.0):
    """k and v [B, Hkv, S, D] whose slots past each row's length (capacity) hold NaN."""
    k, v = seeded(B, Hkv, S, D, seed=seed, scale=scale), seeded(B, Hkv, S, D, seed=seed + 1)
    capacity = torch.arange(S, device=device())[None, :] >= lengths[:, None]  # [B, S]
    k[capacity[:, None, :, None].expand_as(k)] = float("nan")
    v[capacity[:, None, :, None].expand_as(v)] = float("nan")
    return k, v


def checked(q, k, v, lengths, what, rtol=1e-5, atol=1e-5):
    gq, gk, gv = guarded("q", q), guarded("k_cache", k), guarded("v_cache", v)
    out = guarded_output("out", tuple(q.shape), q.dtype, device())

    def run():
        return kernel.decode_attention(gq.view, gk.view, gv.view, lengths, out.view)

    run()
    assert_no_store_outside(out, gq, gk, gv)
    assert_no_load_outside(run, out.view, [gq, gk, gv], f"{what} (or a capacity slot's NaN)")
    expected = oracle(q, k, v, lengths)
    assert_close(out.view.double(), expected, what, rtol=rtol, atol=atol)


@pytest.mark.clause("T07.1")
def test_the_signature_takes_five_positional_arguments_and_returns_out():
    lengths = torch.tensor([3, 5], device=device())
    q = seeded(2, 4, 1, 16, seed=1)
    k, v = caches(2, 2, 6, 16, lengths, seed=2)
    out = torch.empty_like(q)

    assert_binds(kernel.decode_attention, q, k, v, lengths, out)
    got = kernel.decode_attention(q, k, v, lengths, out)

    expected = oracle(q, k, v, lengths).float()
    assert_close(got, expected, "the returned tensor", rtol=1e-5, atol=1e-5)
    assert_close(out, expected, "out, written in place", rtol=1e-5, atol=1e-5)


@pytest.mark.clause("T07.2")
@pytest.mark.parametrize("D", [16, 80])
@pytest.mark.parametrize("lengths", [(1, 7, 16, 31), (32, 2, 17, 5)])
def test_mixed_lengths_match_sdpa_over_each_rows_valid_slots(D, lengths):
    lengths = torch.tensor(lengths, device=device())
    q = seeded(4, 4, 1, D, seed=D)
    k, v = caches(4, 2, 32, D, lengths, seed=D + 1)

    checked(q, k, v, lengths, f"D={D}, lengths {lengths.tolist()}")


@pytest.mark.clause("T07.2")
@pytest.mark.parametrize("lengths", [(40, 3), (19, 33)])
def test_scores_near_1000_stay_finite_so_the_running_max_is_subtracted(lengths):
    lengths = torch.tensor(lengths, device=device())
    q = seeded(2, 2, 1, 16, seed=5, scale=8)
    k, v = caches(2, 1, 40, 16, lengths, seed=6, scale=8)

    checked(q, k, v, lengths, f"large scores, lengths {lengths.tolist()}", rtol=1e-4, atol=1e-4)


@pytest.mark.clause("T07.3")
@pytest.mark.parametrize("Hkv", [8, 4, 2, 1])
def test_query_head_h_reads_kv_head_h_over_the_group(Hkv):
    lengths = torch.tensor([9, 20], device=device())
    q = seeded(2, 8, 1, 16, seed=Hkv)
    k, v = caches(2, Hkv, 24, 16, lengths, seed=Hkv + 10)

    checked(q, k, v, lengths, f"Hq=8, Hkv={Hkv}")
