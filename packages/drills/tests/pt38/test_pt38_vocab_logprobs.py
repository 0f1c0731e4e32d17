"""PT38 vocab_parallel_logprobs(shards, targets, valid=None), shard_max, shard_sums.

Simulated shards: the oracle is log_softmax of the whole row in float64, gathered at the
target; masked positions give 0 and their targets are never read.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT38_MODULE")

pytestmark = [pytest.mark.owner("pt38"), pytest.mark.contract]

TOL = {"rtol": 1e-5, "atol": 1e-5}


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def oracle(full: torch.Tensor, targets: torch.Tensor, valid=None) -> torch.Tensor:
    logp = torch.log_softmax(full.double(), dim=-1)
    safe = targets if valid is None else torch.where(valid, targets, 0)
    picked = logp.gather(-1, safe[:, None])[:, 0]
    return picked if valid is None else torch.where(valid, picked, 0.0)


def check(full, widths, targets, what, valid=None, tol=TOL) -> torch.Tensor:
    shards = list(full.split(widths, dim=-1))
    # the oracle first: the call's writes cannot reach it
    want = oracle(full, targets, valid)
    got = drill.vocab_parallel_logprobs(shards, targets, valid)
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    assert got.dtype == torch.float32, f"{what}: logprobs are {got.dtype}, want float32"
    assert torch.allclose(got.double(), want, **tol), f"{what}:\n{got}\nwant\n{want}"
    return got


@pytest.mark.clause("PT38.2", "PT38.4")
@pytest.mark.parametrize("widths", [[9], [5, 4], [3, 3, 3], [4, 4, 1], [2, 2, 2, 2]], ids=str)
def test_targets_on_every_shard_match_the_full_log_softmax(widths):
    vocab = sum(widths)
    full = seeded(vocab, vocab, seed=vocab) * 3
    targets = long([(7 * n + 2) % vocab for n in range(vocab)])  # every id, every shard
    check(full, widths, targets, f"shards {widths}")


@pytest.mark.clause("PT38.4")
def test_a_target_at_each_edge_of_each_shard():
    full = seeded(6, 10, seed=1) * 2
    check(full, [4, 4, 2], long([0, 3, 4, 7, 8, 9]), "first and last id of every shard")


@pytest.mark.clause("PT38.3", "PT38.5")
@pytest.mark.parametrize("where", ["first shard", "last shard"])
def test_uneven_magnitudes_across_shards(where):
    full = seeded(4, 12, seed=2)
    block = slice(0, 4) if where == "first shard" else slice(8, 12)
    full[:, block] = full[:, block] * 5 + 120.0  # exp(120) overflows fp32: shift first
    full[:, 4:8] -= 40.0
    check(full, [4, 4, 4], long([0, 5, 9, 11]), f"logits near 120 on the {where}")


@pytest.mark.clause("PT38.5")
def test_each_rows_global_max_may_sit_on_a_different_shard():
    full = seeded(3, 9, seed=12)
    for row, shard in enumerate([2, 1, 0]):  # row 0's huge logits on the last shard, ...
        full[row, 3 * shard : 3 * shard + 3] += 150.0
    check(full, [3, 3, 3], long([8, 0, 4]), "per-row maxes near 150 on shards 2, 1, 0")


@pytest.mark.clause("PT38.3", "PT38.5")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_half_precision_logits_keep_fp32_statistics(dtype):
    full = (seeded(3, 3000, seed=3) * 3).to(dtype)
    full[:, :1500] += 8.0
    targets = long([5, 1600, 2999])
    got = check(full, [1000, 1000, 1000], targets, str(dtype), tol={"rtol": 0, "atol": 1e-4})
    assert got.dtype == torch.float32


@pytest.mark.clause("PT38.6")
def test_masked_positions_give_zero_and_their_targets_are_not_read():
    full = seeded(5, 9, seed=4)
    targets = long([2, -1, 8, 100, 5])  # rows 1 and 3 are masked with ids outside V
    valid = torch.tensor([True, False, True, False, True], device=test_device())
    got = check(full, [3, 3, 3], targets, "rows 1 and 3 masked", valid=valid)
    assert got[1].item() == 0.0 and got[3].item() == 0.0, f"masked rows give {got.tolist()}"


@pytest.mark.clause("PT38.6")
def test_every_position_masked_and_none_masked():
    full = seeded(3, 6, seed=5)
    targets = long([1, 4, 5])
    # a copy before the first call: its writes cannot reach the second check
    full_given = full.clone()
    check(full, [3, 3], targets, "none masked", valid=torch.ones(3, dtype=torch.bool))
    check(
        full_given, [3, 3], long([-5, 9, 99]), "all masked", valid=torch.zeros(3, dtype=torch.bool)
    )


@pytest.mark.clause("PT38.7")
@pytest.mark.parametrize("offset", [0, 5])
def test_a_ranks_statistics(offset):
    shard = seeded(4, 5, seed=6 + offset) * 4
    global_max = shard.double().amax(dim=-1) + 1.5  # another shard held a larger logit
    targets = long([offset + 1, offset + 4, offset - 1, offset + 5])  # rows 2, 3 elsewhere
    # the oracle first: the call's writes cannot reach it
    want_max = shard.amax(dim=-1)
    want_sum = (shard.double() - global_max[:, None]).exp().sum(dim=-1)
    want_target = torch.stack([shard[0, 1], shard[1, 4], shard.new_zeros(()), shard.new_zeros(())])
    got_max = drill.shard_max(shard)
    assert got_max.dtype == torch.float32 and torch.equal(got_max, want_max)
    exp_sum, target_logit = drill.shard_sums(shard, targets, offset, global_max.float())
    assert exp_sum.dtype == torch.float32 and target_logit.dtype == torch.float32
    assert torch.allclose(exp_sum.double(), want_sum, **TOL), f"exp-sum {exp_sum}"
    assert torch.equal(target_logit, want_target), f"target logits {target_logit}"


@pytest.mark.clause("PT38.3")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_a_ranks_statistics_are_fp32_for_half_precision_logits(dtype):
    shard = (seeded(3, 4, seed=14) * 4).to(dtype)
    local_max = drill.shard_max(shard)
    assert local_max.dtype == torch.float32, f"shard_max of {dtype} logits is {local_max.dtype}"
    exp_sum, target_logit = drill.shard_sums(shard, long([4, 5, 9]), 4, local_max)
    assert exp_sum.dtype == torch.float32, f"the exp-sum of {dtype} logits is {exp_sum.dtype}"
    assert target_logit.dtype == torch.float32, f"target logits are {target_logit.dtype}"


@pytest.mark.clause("PT38.4", "PT38.6")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_small_sharding(data):
    ranks = data.draw(st.integers(1, 4), label="R")
    width = data.draw(st.integers(1, 4), label="V/R")
    widths = [width] * (ranks - 1) + [data.draw(st.integers(1, width), label="last")]
    vocab, rows = sum(widths), data.draw(st.integers(1, 4), label="N")
    ids = [data.draw(st.integers(0, vocab - 1), label=f"target[{n}]") for n in range(rows)]
    mask = [data.draw(st.booleans(), label=f"valid[{n}]") for n in range(rows)]
    full = seeded(rows, vocab, seed=data.draw(st.integers(0, 2**16), label="seed")) * 4
    valid = torch.tensor(mask, device=test_device())
    check(full, widths, long(ids), f"shards {widths}, targets {ids}", valid=valid)


@pytest.mark.clause("PT38.10")
def test_shards_targets_and_valid_are_only_read():
    full = seeded(3, 8, seed=7)
    shards = [s.clone() for s in full.split([4, 4], dim=-1)]
    targets, valid = long([1, 6, 50]), torch.tensor([True, True, False])
    kept = {f"shard {r}": s for r, s in enumerate(shards)}
    with inputs_untouched(targets=targets, valid=valid, **kept):
        drill.vocab_parallel_logprobs(shards, targets, valid)
        global_max = drill.shard_max(shards[1])
        with inputs_untouched(global_max=global_max):
            drill.shard_sums(shards[1], targets, 4, global_max)


@pytest.mark.clause("PT38.1")
def test_the_arguments_bind_by_name_in_this_projects_order():
    full = seeded(2, 6, seed=8)
    shards, targets = list(full.split([3, 3], dim=-1)), long([1, 4])
    assert_binds(drill.vocab_parallel_logprobs, shards, targets)
    assert_binds(drill.vocab_parallel_logprobs, shards, targets, None)
    assert_binds(drill.vocab_parallel_logprobs, valid=None, targets=targets, shards=shards)
    assert_binds(drill.shard_max, shards[0])
    assert_binds(drill.shard_sums, shards[1], targets, 3, full.amax(dim=-1))
    assert_binds(drill.shard_sums, global_max=full.amax(-1), offset=3, targets=targets,
                 shard=shards[1])  # fmt: skip
    want = oracle(full, targets)  # before the call: its writes cannot reach it
    got = drill.vocab_parallel_logprobs(targets=targets, shards=shards)
    assert torch.allclose(got.double(), want, **TOL), "called by name"


# ---- rejection: valid in every respect but one, before any work ----


@pytest.mark.clause("PT38.9")
@pytest.mark.parametrize(("row", "target"), [(1, 9), (2, -1), (2, 40)])
def test_a_valid_target_outside_the_vocabulary_is_rejected(row, target):
    shards = [s.clone() for s in seeded(3, 9, seed=9).split([4, 4, 1], dim=-1)]
    ids = [0, 5, 8]
    ids[row] = target
    targets = long(ids)
    valid = torch.ones(3, dtype=torch.bool, device=test_device())
    kept = {f"shard {r}": s for r, s in enumerate(shards)}
    with inputs_untouched(targets=targets, valid=valid, **kept):
        assert_rejects(lambda: drill.vocab_parallel_logprobs(shards, targets, valid),
                       BAD_VALUE, "targets", values=[target])  # fmt: skip
    with inputs_untouched(targets=targets, **kept):
        assert_rejects(lambda: drill.vocab_parallel_logprobs(shards, targets),
                       BAD_VALUE, "targets", values=[target])  # fmt: skip
