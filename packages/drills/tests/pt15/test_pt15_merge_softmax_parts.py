"""PT15 merge_softmax_parts(m_a, l_a, o_a, m_b, l_b, o_b) -> (m, l, o): the union's summary."""

from __future__ import annotations

import itertools
import math
from functools import reduce

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate, test_device
from gptlab_testkit.oracles import assert_binds, seeded

drill = candidate("DRILL_PT15_MODULE")

pytestmark = [pytest.mark.owner("pt15"), pytest.mark.contract]

Part = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def part(scores: torch.Tensor, values: torch.Tensor, keys: torch.Tensor) -> Part:
    """(m, l, o) of the selected keys, in float64 then fp32: an empty part is (-inf, 0, 0).

    scores [R..., S], values [R..., S, D], keys bool [R..., S] (which keys are in the part)."""
    s = scores.double().masked_fill(~keys, -math.inf)
    m = s.amax(-1)
    e = torch.exp(s - torch.where(m.isfinite(), m, 0.0)[..., None])
    total = e.sum(-1)
    o = (e[..., None] * values.double()).sum(-2) / torch.where(total > 0, total, 1.0)[..., None]
    return m.float(), total.float(), o.float()


def full_attention(scores: torch.Tensor, values: torch.Tensor, keys: torch.Tensor) -> Part:
    """(max, sum of exp(s - max), softmax-weighted value) over the allowed keys, one row at a
    time in float64 Python; a row with no key is (-inf, 0, 0)."""
    flat_s = scores.double().reshape(-1, scores.shape[-1]).tolist()
    flat_v = values.double().reshape(-1, *values.shape[-2:]).tolist()
    flat_k = keys.reshape(-1, keys.shape[-1]).tolist()
    ms, ls, os = [], [], []
    for row_s, row_v, row_k in zip(flat_s, flat_v, flat_k, strict=True):
        picked = [j for j, k in enumerate(row_k) if k]
        D = len(row_v[0])
        if not picked:
            ms.append(-math.inf), ls.append(0.0), os.append([0.0] * D)
            continue
        top = max(row_s[j] for j in picked)
        w = {j: math.exp(row_s[j] - top) for j in picked}
        total = sum(w.values())
        ms.append(top), ls.append(total)
        os.append([sum(w[j] * row_v[j][d] for j in picked) / total for d in range(D)])
    lead = scores.shape[:-1]
    return (torch.tensor(ms, dtype=torch.float64).reshape(lead),
            torch.tensor(ls, dtype=torch.float64).reshape(lead),
            torch.tensor(os, dtype=torch.float64).reshape(*lead, values.shape[-1]))  # fmt: skip


def merge(a: Part, b: Part) -> Part:
    return drill.merge_softmax_parts(*a, *b)


def assert_summary(got: Part, want: Part, what: str, *, rtol=1e-5, atol=1e-5) -> None:
    m, total, o = got
    assert not (m.isnan().any() or total.isnan().any() or o.isnan().any()), f"{what}: a NaN"
    assert torch.equal(m.double().cpu(), want[0]), f"{what}: m {m.tolist()}, want the max"
    close = {"rtol": rtol, "atol": atol, "msg": lambda msg: f"{what}: {msg}"}
    torch.testing.assert_close(total.double().cpu(), want[1], **close)
    torch.testing.assert_close(o.double().cpu(), want[2], **close)


def split_keys(S: int, bounds: list[int]) -> list[torch.Tensor]:
    """Contiguous key ranges [bounds[i], bounds[i+1]) as bool masks over S keys."""
    j = torch.arange(S, device=test_device())
    return [(j >= lo) & (j < hi) for lo, hi in itertools.pairwise(bounds)]


def problem(seed: int, S: int = 12, D: int = 4, scale: float = 3.0):
    scores = seeded(2, 3, S, seed=seed) * scale
    values = seeded(2, 3, S, D, seed=seed + 1)
    return scores, values, torch.ones(2, 3, S, dtype=torch.bool, device=test_device())


@pytest.mark.clause("PT15.2", "PT15.4")
@pytest.mark.parametrize("cut", [1, 5, 11])
def test_a_two_way_split_equals_full_softmax_attention(cut):
    scores, values, keys = problem(seed=1)
    first, second = split_keys(12, [0, cut, 12])
    got = merge(part(scores, values, first & keys), part(scores, values, second & keys))
    assert_summary(got, full_attention(scores, values, keys), f"split at {cut}")


@pytest.mark.clause("PT15.4")
@pytest.mark.parametrize("bounds", [[0, 3, 6, 9, 12], [0, 1, 2, 7, 8, 12], [0, 6, 6, 12]])
def test_a_many_way_split_folded_left_equals_full_attention(bounds):
    scores, values, keys = problem(seed=2)
    parts = [part(scores, values, p) for p in split_keys(12, bounds)]
    got = reduce(merge, parts[1:], parts[0])
    assert_summary(got, full_attention(scores, values, keys), f"bounds {bounds}")


@pytest.mark.clause("PT15.5")
def test_merging_an_empty_partition_changes_nothing_on_either_side():
    scores, values, keys = problem(seed=3)
    whole, empty = part(scores, values, keys), part(scores, values, keys & False)
    want = full_attention(scores, values, keys)
    assert_summary(merge(whole, empty), want, "(whole, empty)")
    assert_summary(merge(empty, whole), want, "(empty, whole)")


@pytest.mark.clause("PT15.5")
def test_two_empty_partitions_merge_into_an_empty_one_without_nan():
    scores, values, keys = problem(seed=4)
    empty = part(scores, values, keys & False)
    m, total, o = merge(empty, empty)
    assert bool((m == -math.inf).all()), f"m: {m.tolist()}"
    assert bool((total == 0).all() and (o == 0).all()), f"l {total.tolist()}, o {o.tolist()}"


@pytest.mark.clause("PT15.5", "PT15.6")
def test_mixed_lengths_leave_some_rows_partitions_empty():
    scores, values, _ = problem(seed=5)
    lengths = torch.tensor([[12, 3, 7], [0, 1, 9]], device=test_device())
    keys = torch.arange(12, device=test_device()) < lengths[..., None]  # row (1, 0) has no key
    parts = [part(scores, values, keys & p) for p in split_keys(12, [0, 2, 4, 8, 12])]
    got = reduce(merge, parts[1:], parts[0])
    assert_summary(got, full_attention(scores, values, keys), "ragged rows")


@pytest.mark.clause("PT15.6")
@pytest.mark.parametrize("cut", [4, 9])
def test_a_part_empty_for_the_first_row_only_still_counts_for_the_others(cut):
    scores, values, _ = problem(seed=12)
    starts = torch.tensor([[10, 0, 2], [5, 0, 11]], device=test_device())
    lengths = torch.tensor([[12, 5, 12], [9, 1, 12]], device=test_device())
    j = torch.arange(12, device=test_device())
    keys = (j >= starts[..., None]) & (j < lengths[..., None])  # row (0, 0): keys 10 and 11
    first, second = split_keys(12, [0, cut, 12])
    got = merge(part(scores, values, keys & first), part(scores, values, keys & second))
    assert_summary(got, full_attention(scores, values, keys), f"ragged rows, cut {cut}")


@pytest.mark.clause("PT15.7")
@pytest.mark.parametrize(("low", "high"), [(-1000.0, 1000.0), (1e4, 1e4 - 5), (-80.0, 90.0)])
def test_extreme_score_gaps_stay_finite_and_right(low, high):
    scores, values, keys = problem(seed=6, scale=1.0)
    scores[..., :6] += low
    scores[..., 6:] += high
    first, second = split_keys(12, [0, 6, 12])
    got = merge(part(scores, values, first), part(scores, values, second))
    tol = 1e-5 + 1e-6 * max(abs(low), abs(high))
    assert_summary(got, full_attention(scores.float(), values, keys), f"{low} | {high}",
                   atol=tol)  # fmt: skip


@pytest.mark.clause("PT15.8")
@pytest.mark.parametrize("order", ["right fold", "tree", "reversed"])
def test_merge_order_does_not_matter_within_tolerance(order):
    scores, values, keys = problem(seed=7, S=16, scale=4.0)
    parts = [part(scores, values, p) for p in split_keys(16, [0, 2, 5, 6, 11, 16])]
    orders = {
        "right fold": lambda: reduce(lambda acc, p: merge(p, acc), parts[-2::-1], parts[-1]),
        "tree": lambda: merge(merge(parts[0], parts[1]), merge(merge(parts[2], parts[3]),
                                                               parts[4])),
        "reversed": lambda: reduce(merge, parts[-2::-1], parts[-1]),
    }  # fmt: skip
    assert_summary(orders[order](), full_attention(scores, values, keys), order)


@pytest.mark.clause("PT15.3", "PT15.9")
@pytest.mark.parametrize("width", [4, 32], ids=["sixteen parts", "two parts"])
def test_bf16_outputs_merge_with_fp32_summaries_accumulated_in_fp32(width):
    scores, values, keys = problem(seed=8, S=64, scale=2.0)
    parts = [part(scores, values, p) for p in split_keys(64, list(range(0, 65, width)))]
    parts = [(m, total, o.bfloat16()) for m, total, o in parts]
    m, total, o = reduce(merge, parts[1:], parts[0])
    assert m.dtype == total.dtype == torch.float32 and o.dtype == torch.bfloat16, f"{total.dtype}"
    want = full_attention(scores, values, keys)
    torch.testing.assert_close(total.double().cpu(), want[1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(o.double().cpu(), want[2], rtol=2e-2, atol=2e-2)


@pytest.mark.clause("PT15.2", "PT15.4")
def test_one_querys_scalar_summaries_merge_too():
    scores, values = seeded(7, seed=13) * 3, seeded(7, 5, seed=14)
    keys = torch.ones(7, dtype=torch.bool, device=test_device())
    first, second = split_keys(7, [0, 3, 7])
    a, b = part(scores, values, first), part(scores, values, second)
    assert a[0].dim() == 0 and a[2].shape == (5,)
    assert_summary(merge(a, b), full_attention(scores, values, keys), "m, l of shape []")


@pytest.mark.clause("PT15.3")
def test_fp32_parts_give_fp32_results_on_their_device():
    scores, values, keys = problem(seed=9)
    m, total, o = merge(part(scores, values, keys), part(scores, values, keys & False))
    assert m.dtype == total.dtype == o.dtype == torch.float32 and o.device == scores.device


@pytest.mark.clause("PT15.2", "PT15.4", "PT15.5")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_split_of_any_small_problem_matches_full_attention(data):
    S = data.draw(st.integers(1, 9), label="S")
    cuts = sorted(data.draw(st.lists(st.integers(0, S), max_size=4), label="cuts"))
    seed = data.draw(st.integers(0, 2**16), label="seed")
    scores, values = seeded(2, S, seed=seed) * 4, seeded(2, S, 3, seed=seed + 1)
    keys = torch.tensor(
        data.draw(
            st.lists(st.lists(st.booleans(), min_size=S, max_size=S), min_size=2, max_size=2)
        ),
        device=test_device(),
    )
    parts = [part(scores, values, keys & p) for p in split_keys(S, [0, *cuts, S, S])]
    got = reduce(merge, parts[1:], parts[0])  # the last part is empty
    want = full_attention(scores, values, keys)
    assert_summary(got, want, f"S={S}, cuts={cuts}, keys={keys.tolist()}")


@pytest.mark.clause("PT15.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    scores, values, keys = problem(seed=11)
    first, second = split_keys(12, [0, 5, 12])
    a, b = part(scores, values, first), part(scores, values, second)
    named = dict(zip(("m_a", "l_a", "o_a", "m_b", "l_b", "o_b"), (*a, *b), strict=True))
    assert_binds(drill.merge_softmax_parts, *a, *b)
    assert_binds(drill.merge_softmax_parts, **dict(reversed(list(named.items()))))
    got = drill.merge_softmax_parts(**dict(reversed(list(named.items()))))
    assert_summary(got, full_attention(scores, values, keys), "called by name")
