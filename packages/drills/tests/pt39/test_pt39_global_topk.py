"""PT39 global_topk(shards, k), local_topk(shard, k, offset), merge_topk(values, ids, k).

Simulated shards: the oracle is a stable descending sort of the whole row (ties: the
smaller global id first), its first k. Logits are small integers so ties are many and
every comparison is exact.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched

drill = candidate("DRILL_PT39_MODULE")

pytestmark = [pytest.mark.owner("pt39"), pytest.mark.contract]


def logits(rows: int, vocab: int, seed: int, levels: int = 6, dtype=torch.float32):
    """Small integers (many ties), from their own generator."""
    generator = torch.Generator().manual_seed(seed)
    values = torch.randint(-levels, levels, (rows, vocab), generator=generator)
    return values.to(dtype).to(test_device())


def split(full: torch.Tensor, widths: list[int]) -> list[torch.Tensor]:
    return list(full.split(widths, dim=-1))


def oracle(full: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    ranked = torch.sort(full, dim=-1, descending=True, stable=True)
    return ranked.values[:, :k], ranked.indices[:, :k]


def check_pair(got, want, what: str) -> None:
    values, ids = got
    want_values, want_ids = want
    assert values.shape == want_values.shape, f"{what}: values {tuple(values.shape)}"
    assert ids.shape == want_ids.shape, f"{what}: ids {tuple(ids.shape)}"
    assert values.dtype == want_values.dtype, f"{what}: values are {values.dtype}"
    assert ids.dtype == torch.int64, f"{what}: ids are {ids.dtype}, want int64"
    assert torch.equal(values, want_values), f"{what}: values\n{values}\nwant\n{want_values}"
    assert torch.equal(ids, want_ids), f"{what}: ids\n{ids}\nwant\n{want_ids}"


def check_global(full: torch.Tensor, widths: list[int], k: int, what: str) -> None:
    # the oracle first: the call's writes cannot reach it
    want = oracle(full, k)
    check_pair(drill.global_topk(split(full, widths), k), want, what)


@pytest.mark.clause("PT39.2", "PT39.3", "PT39.4")
@pytest.mark.parametrize("widths", [[12], [6, 6], [3, 3, 3, 3], [5, 5, 2], [4, 4, 4, 1]], ids=str)
@pytest.mark.parametrize("k", [1, 3, 7])
def test_the_global_top_k_is_the_full_rows(widths, k):
    full = logits(4, sum(widths), seed=k + 10 * len(widths), levels=50)
    check_global(full, widths, k, f"shards {widths}, k={k}")


@pytest.mark.clause("PT39.4")
@pytest.mark.parametrize("widths", [[5], [3, 3, 2], [4, 4, 1]], ids=str)
def test_k_equal_to_the_vocabulary_is_the_whole_row_ranked(widths):
    full = logits(3, sum(widths), seed=1)
    check_global(full, widths, sum(widths), f"k = V = {sum(widths)}")


@pytest.mark.clause("PT39.4")
def test_a_last_shard_narrower_than_k_sends_what_it_has():
    full = logits(3, 11, seed=2, levels=40)
    full[1, 10] = 100.0  # row 1's best sits alone on the last, one-wide shard
    check_global(full, [5, 5, 1], 4, "last shard one wide, k = 4")


@pytest.mark.clause("PT39.5")
@pytest.mark.parametrize("k", [1, 2, 5])
def test_equal_values_rank_by_the_smaller_global_id(k):
    full = torch.zeros(3, 9, device=test_device())
    full[1, [2, 4, 7]] = 1.0  # row 1: three equal best values on three shards
    full[2, [8, 5]] = 2.0  # row 2: ties found in reverse shard order
    check_global(full, [3, 3, 3], k, f"ties across shards, k={k}")


@pytest.mark.clause("PT39.5")
def test_a_tie_at_the_kth_place_keeps_the_smaller_ids():
    full = torch.tensor([[1.0, 3.0, 2.0, 2.0, 2.0, 0.0, 2.0, 2.0]], device=test_device())
    full = torch.cat([full, full.flip(-1)])  # row 1: the same values, ids mirrored
    check_global(full, [3, 3, 2], 3, "five 2s for two places")


@pytest.mark.clause("PT39.2", "PT39.4")
def test_one_row_and_many_rows():
    check_global(logits(1, 7, seed=3), [4, 3], 2, "N = 1")
    check_global(logits(40, 16, seed=4), [4, 4, 4, 4], 5, "N = 40")


@pytest.mark.clause("PT39.3", "PT39.4")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64, torch.int64], ids=str)
def test_values_keep_the_shards_dtype(dtype):
    full = logits(3, 8, seed=5, dtype=dtype)
    check_global(full, [4, 4], 3, str(dtype))


@pytest.mark.clause("PT39.2", "PT39.6")
@pytest.mark.parametrize(("width", "k", "offset"), [(6, 2, 0), (6, 6, 12), (3, 5, 9), (1, 4, 7)])
def test_a_rank_sends_its_best_min_k_v_r_with_global_ids(width, k, offset):
    shard = logits(4, width, seed=width + k)
    # the oracle first: the call's writes cannot reach it
    want_values, want_local = oracle(shard, min(k, width))
    values, ids = drill.local_topk(shard, k, offset)
    check_pair((values, ids), (want_values, want_local + offset), f"V_r={width}, k={k}")


@pytest.mark.clause("PT39.7")
@pytest.mark.parametrize("k", [1, 3, 6])
def test_merging_candidates_given_in_any_order_keeps_the_tie_policy(k):
    values = torch.tensor([[2.0, 5.0, 2.0, 5.0, 1.0, 2.0], [0.0, 0.0, 3.0, 0.0, 3.0, 1.0]])
    ids = torch.tensor([[40, 31, 7, 12, 3, 9], [5, 2, 30, 8, 11, 60]])
    values, ids = values.to(test_device()), ids.to(test_device())
    # the oracle first: the call's writes cannot reach it
    by_id = ids.argsort(dim=-1)
    ranked = torch.sort(values.gather(-1, by_id), dim=-1, descending=True, stable=True)
    want_ids = ids.gather(-1, by_id).gather(-1, ranked.indices)[:, :k]
    got = drill.merge_topk(values, ids, k)
    check_pair(got, (ranked.values[:, :k], want_ids), f"merge, k={k}")


@pytest.mark.clause("PT39.4", "PT39.5")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_small_sharding(data):
    ranks = data.draw(st.integers(1, 4), label="R")
    width = data.draw(st.integers(1, 4), label="V/R")
    last = data.draw(st.integers(1, width), label="last shard")
    widths = [width] * (ranks - 1) + [last]
    k = data.draw(st.integers(1, sum(widths)), label="k")
    full = logits(3, sum(widths), seed=data.draw(st.integers(0, 2**16), label="seed"), levels=2)
    check_global(full, widths, k, f"shards {widths}, k={k}")


@pytest.mark.clause("PT39.10")
def test_shards_are_only_read():
    full = logits(3, 9, seed=6)
    shards = [s.clone() for s in split(full, [4, 4, 1])]
    with inputs_untouched(**{f"shard {r}": s for r, s in enumerate(shards)}):
        check_pair(drill.global_topk(shards, 5), oracle(full, 5), "shards kept")
    values, ids = drill.local_topk(shards[0], 3, 0)
    with inputs_untouched(values=values, ids=ids):
        drill.merge_topk(values, ids, 2)


@pytest.mark.clause("PT39.1")
def test_the_arguments_bind_by_name_in_this_projects_order():
    full = logits(2, 6, seed=7)
    shards = split(full, [3, 3])
    assert_binds(drill.global_topk, shards, 2)
    assert_binds(drill.global_topk, k=2, shards=shards)
    assert_binds(drill.local_topk, shards[1], 2, 3)
    assert_binds(drill.local_topk, offset=3, k=2, shard=shards[1])
    values, ids = oracle(full, 4)
    assert_binds(drill.merge_topk, values, ids, 2)
    assert_binds(drill.merge_topk, k=2, ids=ids, values=values)
    # the oracle first: the call's writes cannot reach it
    want = oracle(full, 2)
    want_local_values, want_local_ids = oracle(shards[1], 2)
    check_pair(drill.global_topk(k=2, shards=shards), want, "by name")
    local = drill.local_topk(offset=3, k=2, shard=shards[1])
    check_pair(local, (want_local_values, want_local_ids + 3), "by name")
    check_pair(drill.merge_topk(k=2, ids=ids, values=values), want, "by name")


# ---- rejection: valid in every respect but one, before any work ----


@pytest.mark.clause("PT39.9")
@pytest.mark.parametrize("k", [0, -1, 10, 11], ids=lambda k: f"k={k}")
def test_k_outside_the_vocabulary_range_is_rejected(k):
    shards = split(logits(2, 9, seed=8), [4, 4, 1])
    with inputs_untouched(**{f"shard {r}": s for r, s in enumerate(shards)}):
        assert_rejects(lambda: drill.global_topk(shards, k), BAD_VALUE, "k", values=[k])
