"""PT35 fixed_cache_decode(queries, keys, values, k_cache, v_cache, filled=0), repaired from
artifacts/pt35_start.py: the same outputs, written into the caller's fixed-capacity caches.

Every oracle is a float64 replay of the start loop's math (a cache grown by cat, one step at
a time), computed from clones before the candidate's call.
"""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import BAD_VALUE, assert_close, assert_rejects, candidate
from gptlab_testkit.objects import memory_address
from gptlab_testkit.oracles import (
    CONCATENATIONS,
    assert_binds,
    forbidding,
    inputs_untouched,
    seeded,
)

drill = candidate("DRILL_PT35_MODULE")

pytestmark = [pytest.mark.owner("pt35"), pytest.mark.contract]


def steps(B: int, T: int, H: int, D: int, seed: int, dtype: torch.dtype = torch.float32):
    """queries, keys, values [B, T, H, D], each from its own seed."""
    return [seeded(B, T, H, D, seed=seed + i, dtype=dtype) for i in range(3)]


def caches(B: int, H: int, C: int, D: int, seed: int, dtype: torch.dtype = torch.float32):
    """k_cache, v_cache [B, H, C, D] full of earlier (and stale) values."""
    return seeded(B, H, C, D, seed=seed, dtype=dtype), seeded(
        B, H, C, D, seed=seed + 1, dtype=dtype
    )


def replay(queries, keys, values, k_cache, v_cache, filled: int) -> torch.Tensor:
    """The start loop's math in float64: the cache's first `filled` slots, then one new key
    and value concatenated per step; step t attends over everything so far."""
    B, T, H, D = queries.shape
    grown_k = k_cache[:, :, :filled].double().clone()
    grown_v = v_cache[:, :, :filled].double().clone()
    outputs = []
    for t in range(T):
        grown_k = torch.cat([grown_k, keys[:, t].double().reshape(B, H, 1, D)], dim=2)
        grown_v = torch.cat([grown_v, values[:, t].double().reshape(B, H, 1, D)], dim=2)
        query = queries[:, t].double().reshape(B, H, 1, D)
        scores = query @ grown_k.transpose(2, 3) / math.sqrt(D)
        outputs.append((scores.softmax(-1) @ grown_v).transpose(1, 2))
    return torch.cat(outputs, dim=1)


def written(cache: torch.Tensor, new: torch.Tensor, filled: int) -> torch.Tensor:
    """The cache as the call must leave it: slots filled.. hold new [B, T, H, D]."""
    want = cache.clone()
    for t in range(new.shape[1]):
        want[:, :, filled + t] = new[:, t]
    return want


# (B, T, H, D, C, filled): one step into an empty cache, the whole capacity from empty,
# the last slot, and a continuation in the middle.
LENGTHS = [(2, 1, 2, 4, 5, 0), (2, 6, 2, 4, 6, 0), (2, 1, 3, 4, 7, 6), (1, 3, 2, 8, 9, 4)]
LENGTH_IDS = ["one step", "T = C from empty", "the last slot", "a middle continuation"]


@pytest.mark.clause("PT35.1")
def test_the_arguments_bind_by_position_and_by_name_and_filled_defaults_to_zero():
    q, k, v = steps(1, 2, 2, 4, seed=1)
    k_cache, v_cache = caches(1, 2, 4, 4, seed=4)
    assert_binds(drill.fixed_cache_decode, q, k, v, k_cache, v_cache, 0)
    assert_binds(drill.fixed_cache_decode, q, k, v, k_cache, v_cache)
    names = {"queries": q, "keys": k, "values": v, "k_cache": k_cache, "v_cache": v_cache}
    assert_binds(drill.fixed_cache_decode, filled=1, **names)
    want = replay(q, k, v, k_cache, v_cache, filled=1)

    got = drill.fixed_cache_decode(filled=1, **dict(reversed(names.items())))

    assert_close(got.double(), want, "called by name with filled = 1")
    default = replay(q, k, v, *caches(1, 2, 4, 4, seed=4), filled=0)
    assert_close(drill.fixed_cache_decode(q, k, v, *caches(1, 2, 4, 4, seed=4)).double(), default)


@pytest.mark.clause("PT35.2")
@pytest.mark.parametrize("capacity", [3, 8])
def test_the_output_is_b_t_h_d_whatever_the_capacity(capacity):
    q, k, v = steps(2, 3, 2, 4, seed=7)
    k_cache, v_cache = caches(2, 2, capacity, 4, seed=10)

    got = drill.fixed_cache_decode(q, k, v, k_cache, v_cache, 0)

    assert tuple(got.shape) == (2, 3, 2, 4)


@pytest.mark.clause("PT35.3")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
def test_the_output_keeps_the_queries_dtype(dtype):
    q, k, v = steps(2, 3, 2, 4, seed=12, dtype=dtype)
    k_cache, v_cache = caches(2, 2, 5, 4, seed=15, dtype=dtype)
    want = replay(q, k, v, k_cache, v_cache, filled=1)

    got = drill.fixed_cache_decode(q, k, v, k_cache, v_cache, 1)

    assert got.dtype == dtype
    tight = {"atol": 1e-10, "rtol": 1e-10} if dtype == torch.float64 else {}
    assert_close(got.double(), want, f"{dtype} outputs", **tight)


@pytest.mark.clause("PT35.4")
@pytest.mark.parametrize(("B", "T", "H", "D", "C", "filled"), LENGTHS, ids=LENGTH_IDS)
def test_the_outputs_equal_the_start_loops(B, T, H, D, C, filled):
    q, k, v = steps(B, T, H, D, seed=20)
    k_cache, v_cache = caches(B, H, C, D, seed=23)
    want = replay(q, k, v, k_cache, v_cache, filled)

    got = drill.fixed_cache_decode(q, k, v, k_cache, v_cache, filled)

    assert_close(got.double(), want, f"T = {T} after {filled} of {C} slots")


@pytest.mark.clause("PT35.4")
def test_a_row_other_than_the_first_is_decoded_alone():
    q, k, v = steps(3, 4, 2, 4, seed=30)
    k_cache, v_cache = caches(3, 2, 7, 4, seed=33)
    want = replay(q[1:2], k[1:2], v[1:2], k_cache[1:2], v_cache[1:2], filled=2)

    got = drill.fixed_cache_decode(q, k, v, k_cache, v_cache, 2)

    assert_close(got[1:2].double(), want, "row 1 against its own replay")


@pytest.mark.clause("PT35.5")
@pytest.mark.parametrize(("B", "T", "H", "D", "C", "filled"), LENGTHS, ids=LENGTH_IDS)
def test_the_new_keys_and_values_land_in_their_slots_and_nothing_else_changes(
    B, T, H, D, C, filled
):
    q, k, v = steps(B, T, H, D, seed=40)
    k_cache, v_cache = caches(B, H, C, D, seed=43)
    want_k, want_v = written(k_cache, k, filled), written(v_cache, v, filled)

    drill.fixed_cache_decode(q, k, v, k_cache, v_cache, filled)

    assert torch.equal(k_cache, want_k), "k_cache: wrong slots written or others changed"
    assert torch.equal(v_cache, want_v), "v_cache: wrong slots written or others changed"


@pytest.mark.clause("PT35.6")
def test_the_stale_tail_of_the_capacity_is_never_read():
    q, k, v = steps(2, 3, 2, 4, seed=50)
    k_cache, v_cache = caches(2, 2, 9, 4, seed=53)
    k_cache[:, :, 5:], v_cache[:, :, 5:] = float("nan"), float("nan")  # past filled + T
    want = replay(q, k, v, k_cache, v_cache, filled=2)

    got = drill.fixed_cache_decode(q, k, v, k_cache, v_cache, 2)

    assert_close(got.double(), want, "outputs with NaN past filled + T")


@pytest.mark.clause("PT35.6")
def test_a_later_step_never_reaches_an_earlier_output():
    q, k, v = steps(2, 4, 2, 4, seed=60)
    k[:, -1], v[:, -1] = 50.0, -50.0  # a last key every earlier query would favour
    k_cache, v_cache = caches(2, 2, 6, 4, seed=63)
    want = replay(q, k, v, k_cache, v_cache, filled=1)

    got = drill.fixed_cache_decode(q, k, v, k_cache, v_cache, 1)

    assert_close(got[:, :-1].double(), want[:, :-1], "steps 0..2 with a huge last key")
    assert_close(got[:, -1].double(), want[:, -1], "the last step")


@pytest.mark.rejection
@pytest.mark.clause("PT35.7")
@pytest.mark.parametrize(
    ("C", "filled", "T"),
    [(5, 3, 3), (5, 5, 1), (4, 0, 5), (6, -1, 2)],
    ids=["filled + T = C + 1", "filled = C", "T > C from empty", "negative filled"],
)
def test_a_call_past_the_capacity_is_rejected_before_anything_changes(C, filled, T):
    q, k, v = steps(2, T, 2, 4, seed=70)
    k_cache, v_cache = caches(2, 2, C, 4, seed=73)

    with inputs_untouched(queries=q, keys=k, values=v, k_cache=k_cache, v_cache=v_cache):
        assert_rejects(
            lambda: drill.fixed_cache_decode(q, k, v, k_cache, v_cache, filled),
            BAD_VALUE,
            ("filled", "capacity", "k_cache", "keys", "queries"),
            values=(filled, C, filled + T),
        )


@pytest.mark.clause("PT35.8")
def test_a_view_of_the_callers_caches_taken_before_the_call_sees_the_writes():
    q, k, v = steps(2, 3, 2, 4, seed=80)
    k_cache, v_cache = caches(2, 2, 8, 4, seed=83)
    k_view, v_view = k_cache[:, :, 4:7], v_cache[:, :, 4:7]

    drill.fixed_cache_decode(q, k, v, k_cache, v_cache, 4)

    assert torch.equal(k_view, k.transpose(1, 2)), "keys not written into the caller's k_cache"
    assert torch.equal(v_view, v.transpose(1, 2)), "values not written into the caller's v_cache"


@pytest.mark.clause("PT35.9")
def test_the_caches_keep_their_data_pointers_over_a_decode():
    k_cache, v_cache = caches(1, 2, 6, 4, seed=90)
    before = (memory_address(k_cache), memory_address(v_cache))

    for call, filled in enumerate((0, 2, 5)):
        q, k, v = steps(1, 1 if filled == 5 else 2, 2, 4, seed=91 + 3 * call)
        drill.fixed_cache_decode(q, k, v, k_cache, v_cache, filled)
        after = (memory_address(k_cache), memory_address(v_cache))
        assert after == before, f"the caches moved on the call with filled = {filled}"


@pytest.mark.clause("PT35.10")
@pytest.mark.parametrize(("T", "filled"), [(5, 3), (1, 0)], ids=["five steps", "one step"])
def test_a_call_makes_no_concatenation_and_no_host_sync(T, filled):
    q, k, v = steps(2, T, 2, 4, seed=100)
    k_cache, v_cache = caches(2, 2, 8, 4, seed=103)
    # Not Tensor.contiguous: torch's own Python (an SDPA path, say) may call it; its copies
    # are the harness's to count.
    hidden = (*CONCATENATIONS, torch.Tensor.item)

    with forbidding(*hidden, what="fixed_cache_decode"):
        drill.fixed_cache_decode(q, k, v, k_cache, v_cache, filled)


@pytest.mark.clause("PT35.11")
def test_queries_keys_and_values_are_only_read():
    q, k, v = steps(2, 3, 2, 4, seed=110)
    k_cache, v_cache = caches(2, 2, 4, 4, seed=113)

    with inputs_untouched(queries=q, keys=k, values=v):
        drill.fixed_cache_decode(q, k, v, k_cache, v_cache, 1)
