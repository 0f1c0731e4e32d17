"""PT20 varlen_attention(q [N, Hq, D], k, v [N, Hkv, D], cu_seqlens [B + 1], scale=None).

The oracle runs each sequence on its own: padded to the longest sequence with junk rows,
pad keys masked, causal, one query at a time in float64 (gptlab_testkit's loop attention),
then its real rows are compared with the packed output's rows at fp32 tolerance.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, loop_attention, seeded

drill = candidate("DRILL_PT20_MODULE")

pytestmark = [pytest.mark.owner("pt20"), pytest.mark.contract]


def offsets(lengths: list[int]) -> torch.Tensor:
    bounds = [sum(lengths[:b]) for b in range(len(lengths) + 1)]
    return torch.tensor(bounds, dtype=torch.long, device=test_device())


def packed(lengths: list[int], Hq: int, Hkv: int, D: int, seed: int):
    N = sum(lengths)
    return (
        seeded(N, Hq, D, seed=seed),
        seeded(N, Hkv, D, seed=seed + 1),
        seeded(N, Hkv, D, seed=seed + 2),
    )


def padded_alone(x: torch.Tensor, start: int, n: int, T: int) -> torch.Tensor:
    """One sequence's rows [n, H, D] padded with junk to [1, H, T, D] (float64, CPU)."""
    junk = torch.full((T, x.shape[1], x.shape[2]), 7.0, dtype=torch.float64)
    junk[:n] = x[start : start + n].double().cpu()
    return junk.transpose(0, 1)[None]


def separate_padded_runs(q, k, v, lengths: list[int], scale: float | None) -> torch.Tensor:
    """[N, Hq, D] float64: each sequence alone, padded to the longest, causal, pads masked."""
    N, Hq, D = q.shape
    T = max(lengths, default=0)
    factor = 1.0 if scale is None else scale * math.sqrt(D)  # loop_attention divides by sqrt(D)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    out = torch.zeros(N, Hq, D, dtype=torch.float64)
    start = 0
    for n in lengths:
        if n:
            # pad queries keep their own key so the oracle never meets an empty row
            allowed = causal & ((torch.arange(T) < n)[None, :] | torch.eye(T, dtype=torch.bool))
            parts = (padded_alone(t, start, n, T) for t in (q, k, v))
            pq, pk, pv = parts
            alone = loop_attention(pq * factor, pk, pv, allowed)  # [1, Hq, T, D]
            out[start : start + n] = alone[0].transpose(0, 1)[:n]
        start += n
    return out


def check(q, k, v, lengths: list[int], what: str, scale: float | None = None) -> None:
    if scale is None:
        got = drill.varlen_attention(q, k, v, offsets(lengths))
    else:
        got = drill.varlen_attention(q, k, v, offsets(lengths), scale=scale)
    assert tuple(got.shape) == tuple(q.shape), f"{what}: shape {tuple(got.shape)}"
    assert got.dtype == q.dtype, f"{what}: dtype {got.dtype}, q is {q.dtype}"
    want = separate_padded_runs(q, k, v, lengths, scale)
    assert_close(got.double().cpu(), want, f"{what}: vs each sequence run alone")


@pytest.mark.clause("PT20.1")
def test_the_arguments_bind_in_this_projects_order():
    q, k, v = packed([2, 3], 2, 1, 4, seed=1)
    cu = offsets([2, 3])
    assert_binds(drill.varlen_attention, q, k, v, cu)
    assert_binds(drill.varlen_attention, q, k, v, cu, scale=0.5)
    assert_binds(drill.varlen_attention, q=q, k=k, v=v, cu_seqlens=cu, scale=None)
    by_name = drill.varlen_attention(q=q, k=k, v=v, cu_seqlens=cu)
    assert_close(by_name, drill.varlen_attention(q, k, v, cu), "by name vs by position")


@pytest.mark.clause("PT20.2", "PT20.4")
def test_mixed_lengths_match_separate_padded_runs():
    q, k, v = packed([3, 1, 5, 2], 2, 2, 4, seed=2)
    check(q, k, v, [3, 1, 5, 2], "lengths 3, 1, 5, 2")


@pytest.mark.clause("PT20.5")
@pytest.mark.parametrize("lengths", [[0, 3, 2], [2, 0, 0, 3], [4, 1, 0], [0, 0]], ids=str)
def test_zero_length_segments_anywhere_add_no_rows(lengths):
    q, k, v = packed(lengths, 2, 1, 4, seed=3)
    check(q, k, v, lengths, f"lengths {lengths}")


@pytest.mark.clause("PT20.5")
def test_one_token_sequences_attend_only_themselves():
    q, k, v = packed([1, 1, 1], 2, 2, 3, seed=4)
    got = drill.varlen_attention(q, k, v, offsets([1, 1, 1]))
    assert_close(got, v, "a one-token sequence returns its own value row")


@pytest.mark.clause("PT20.6")
@pytest.mark.parametrize(("Hq", "Hkv"), [(2, 2), (4, 2), (4, 1)], ids=["MHA", "GQA 2", "MQA"])
def test_grouped_query_heads_read_their_kv_head(Hq, Hkv):
    q, k, v = packed([3, 4], Hq, Hkv, 4, seed=5)
    check(q, k, v, [3, 4], f"Hq={Hq}, Hkv={Hkv}")


@pytest.mark.clause("PT20.7")
@pytest.mark.parametrize("scale", [0.125, 2.0, -0.5])
def test_a_given_scale_replaces_one_over_root_d(scale):
    q, k, v = packed([2, 4], 2, 1, 4, seed=6)
    check(q, k, v, [2, 4], f"scale={scale}", scale=scale)


@pytest.mark.clause("PT20.8")
def test_each_row_is_its_own_query_under_any_packing_order():
    lengths, order = [3, 2, 4], [2, 0, 1]
    q, k, v = packed(lengths, 2, 1, 4, seed=7)
    bounds = offsets(lengths).tolist()
    rows = torch.cat([torch.arange(bounds[b], bounds[b + 1]) for b in order]).to(test_device())

    repacked = drill.varlen_attention(
        q[rows], k[rows], v[rows], offsets([lengths[b] for b in order])
    )
    original = drill.varlen_attention(q, k, v, offsets(lengths))

    assert_close(repacked, original[rows], "sequences packed in another order")


@pytest.mark.clause("PT20.8")
def test_nothing_flows_between_neighbouring_sequences():
    q, k, v = packed([3, 3], 2, 2, 4, seed=8)
    before = drill.varlen_attention(q, k, v, offsets([3, 3]))
    k2, v2 = k.clone(), v.clone()
    k2[:3], v2[:3] = -5 * k2[:3], v2[:3] + 9  # the first sequence's keys and values only

    after = drill.varlen_attention(q, k2, v2, offsets([3, 3]))

    assert_close(after[3:], before[3:], "sequence 1 saw sequence 0's keys")


@pytest.mark.clause("PT20.4")
def test_views_of_one_packed_qkv_tensor_are_read_by_their_layout():
    qkv = seeded(7, 4 + 2 + 2, 4, seed=9)  # [N, Hq + 2 Hkv, D], heads side by side
    q, k, v = qkv[:, :4], qkv[:, 4:6], qkv[:, 6:]
    assert not q.is_contiguous()
    check(q, k, v, [4, 3], "q, k, v as head slices of one tensor")


@pytest.mark.clause("PT20.2", "PT20.3")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_the_output_keeps_qs_dtype(dtype):
    q, k, v = (t.to(dtype) for t in packed([2, 3], 2, 1, 4, seed=10))
    got = drill.varlen_attention(q, k, v, offsets([2, 3]))
    assert got.dtype == dtype and tuple(got.shape) == (5, 2, 4), f"{got.dtype} {tuple(got.shape)}"
    want = separate_padded_runs(q, k, v, [2, 3], None)
    assert_close(got.double().cpu(), want, "bf16 vs float64", atol=3e-2, rtol=3e-2)


@pytest.mark.clause("PT20.2")
def test_no_tokens_give_an_empty_output():
    q, k, v = packed([], 2, 1, 4, seed=11)
    got = drill.varlen_attention(q, k, v, offsets([]))
    assert tuple(got.shape) == (0, 2, 4), f"shape {tuple(got.shape)}"


@pytest.mark.clause("PT20.4", "PT20.5", "PT20.6")
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_any_small_pack_matches_separate_padded_runs(data):
    lengths = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=4), label="lengths")
    Hkv = data.draw(st.integers(1, 2), label="Hkv")
    Hq = Hkv * data.draw(st.integers(1, 2), label="group")
    D = data.draw(st.integers(1, 4), label="D")
    q, k, v = packed(lengths, Hq, Hkv, D, seed=data.draw(st.integers(0, 2**16), label="seed"))
    check(q, k, v, lengths, f"lengths {lengths}, Hq={Hq}, Hkv={Hkv}, D={D}")


@pytest.mark.clause("PT20.9")
def test_the_inputs_are_only_read():
    q, k, v = packed([3, 2], 2, 1, 4, seed=12)
    cu = offsets([3, 2])
    with inputs_untouched(q=q, k=k, v=v, cu_seqlens=cu):
        drill.varlen_attention(q, k, v, cu, scale=0.3)
