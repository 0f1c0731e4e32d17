"""PT22 packed_prompt_logprobs(logits [N, V], token_ids [N], offsets [B + 1], top_k).

The oracle runs each request alone, padded to the longest request with junk rows past its
end, one token at a time in float64: token t >= 1 of a request is scored with the request's
own row t - 1; token 0 gets the sentinel (NaN logprobs, id -1, rank -1). Ids and ranks come
from the logits' order (exact); logprobs are compared at fp32 tolerance.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT22_MODULE")

pytestmark = [pytest.mark.owner("pt22"), pytest.mark.contract]

Scored = tuple[float, list[int], list[float], int] | None  # None: a request's first token


def long(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device()).reshape(len(values))


def offsets_of(lengths: list[int]) -> list[int]:
    return [sum(lengths[:r]) for r in range(len(lengths) + 1)]


def scored(row: torch.Tensor, target: int, top_k: int) -> Scored:
    """One token against the float64 row of logits that predicts it."""
    logprobs = row - torch.logsumexp(row, 0)
    values = row.tolist()
    order = sorted(range(len(values)), key=lambda v: (-values[v], v))[:top_k]
    rank = 1 + sum(1 for value in values if value > values[target])
    return logprobs[target].item(), order, [logprobs[v].item() for v in order], rank


def padded_runs(logits: torch.Tensor, ids: list[int], lengths: list[int], top_k: int):
    """Per flat token: its request run alone, padded with junk rows (1e4) to the longest."""
    longest = max(lengths, default=0)
    want: list[Scored] = []
    for r, length in enumerate(lengths):
        start = offsets_of(lengths)[r]
        padded = torch.full((longest, logits.shape[1]), 1e4, dtype=torch.float64)
        padded[:length] = logits[start : start + length].double().cpu()
        for t in range(length):
            want.append(None if t == 0 else scored(padded[t - 1], ids[start + t], top_k))
    return want


def call(logits: torch.Tensor, ids: list[int], lengths: list[int], top_k: int):
    return drill.packed_prompt_logprobs(logits, long(ids), long(offsets_of(lengths)), top_k)


def close(got: float, want: float) -> bool:
    return abs(got - want) <= 1e-5 + 1e-5 * abs(want)


def check(logits: torch.Tensor, ids: list[int], lengths: list[int], top_k: int, what: str):
    logprobs, top_ids, top_logprobs, ranks = call(logits, ids, lengths, top_k)
    N = len(ids)
    assert tuple(logprobs.shape) == (N,) and tuple(ranks.shape) == (N,), f"{what}: [N] shapes"
    assert tuple(top_ids.shape) == (N, top_k) == tuple(top_logprobs.shape), f"{what}: top shape"
    for n, want in enumerate(padded_runs(logits, ids, lengths, top_k)):
        at = f"{what}: flat token {n}"
        if want is None:
            assert math.isnan(logprobs[n].item()), f"{at} starts its request: logprob NaN"
            assert ranks[n].item() == -1 and top_ids[n].tolist() == [-1] * top_k, f"{at}: ids -1"
            assert all(math.isnan(v) for v in top_logprobs[n].tolist()), f"{at}: top NaN"
            continue
        logprob, order, values, rank = want
        assert close(logprobs[n].item(), logprob), f"{at}: {logprobs[n].item()} != {logprob}"
        assert top_ids[n].tolist() == order, f"{at}: top ids {top_ids[n].tolist()} != {order}"
        got_values = top_logprobs[n].tolist()
        assert all(map(close, got_values, values)), f"{at}: top {got_values} != {values}"
        assert ranks[n].item() == rank, f"{at}: rank {ranks[n].item()} != {rank}"


@pytest.mark.clause("PT22.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    logits, ids, offsets = seeded(3, 4, seed=1), long([1, 2, 0]), long([0, 3])
    assert_binds(drill.packed_prompt_logprobs, logits, ids, offsets, 2)
    assert_binds(
        drill.packed_prompt_logprobs, top_k=2, offsets=offsets, token_ids=ids, logits=logits
    )
    by_name = drill.packed_prompt_logprobs(top_k=2, offsets=offsets, token_ids=ids, logits=logits)
    by_position = drill.packed_prompt_logprobs(logits, ids, offsets, 2)
    for got, again in zip(by_name, by_position, strict=True):
        assert torch.equal(got.nan_to_num(), again.nan_to_num()), "by name != by position"
    check(logits, [1, 2, 0], [3], 2, "called by name")


@pytest.mark.clause("PT22.2", "PT22.3")
def test_four_results_of_the_stated_shapes_and_dtypes():
    result = call(seeded(5, 6, seed=2), [1, 2, 3, 0, 5], [2, 3], 3)
    assert len(result) == 4, f"want (logprobs, top_ids, top_logprobs, ranks), got {len(result)}"
    shapes = [tuple(t.shape) for t in result]
    assert shapes == [(5,), (5, 3), (5, 3), (5,)], f"shapes {shapes}"
    dtypes = [t.dtype for t in result]
    want = [torch.float32, torch.int64, torch.float32, torch.int64]
    assert dtypes == want, f"dtypes {dtypes}, want {want}"


@pytest.mark.clause("PT22.4", "PT22.5")
def test_requests_of_zero_one_and_many_tokens_match_separate_padded_runs():
    lengths = [3, 0, 1, 4, 0, 2]
    ids = [2, 0, 5, 1, 3, 3, 4, 0, 6, 1]
    check(seeded(10, 7, seed=3), ids, lengths, 3, f"lengths {lengths}")


@pytest.mark.clause("PT22.5")
def test_every_requests_first_token_gets_the_sentinel_even_after_an_empty_request():
    check(seeded(6, 5, seed=4), [1, 2, 3, 4, 0, 1], [2, 0, 3, 1], 2, "lengths 2, 0, 3, 1")


@pytest.mark.clause("PT22.4", "PT22.6", "PT22.7")
def test_a_target_outside_the_top_k_keeps_its_logprob_and_rank():
    logits = torch.tensor(
        [[4.0, 3.0, 2.0, 1.0, 0.0], [0.0, 1.0, 2.0, 3.0, 4.0], [0.0] * 5], device=test_device()
    )
    check(logits, [0, 4, 0], [3], 2, "targets ranked 5th and 5th with top_k = 2")


@pytest.mark.clause("PT22.6", "PT22.7")
def test_ties_list_the_lower_id_first_and_share_the_best_rank():
    row = [1.0, 3.0, 3.0, 0.0, 3.0, 3.0]
    logits = torch.tensor([row] * 4, device=test_device())
    check(logits, [0, 4, 0, 3], [4], 3, "three of four tied ids in the top 3")
    check(logits, [0, 5, 2, 1], [4], 6, "ties across the whole vocabulary")


@pytest.mark.clause("PT22.6", "PT22.7")
def test_a_uniform_row_ranks_every_target_first_and_lists_ids_in_order():
    check(torch.zeros(4, 5, device=test_device()), [3, 0, 4, 2], [4], 3, "all logits equal")


EXTREMES = {
    "gaps of 2e4": ([[1e4, -1e4, 0.0, 80.0], [0.0] * 4], [0, 1]),
    "a -1e30 and a tie at 3e4": (
        [[-1e30, 0.0, 1e-30, -3.0], [3e4, 3e4, -3e4, 0.0], [0.0] * 4],
        [0, 0, 1],  # the last target ties for first place at 3e4
    ),
}


@pytest.mark.clause("PT22.4", "PT22.9")
@pytest.mark.parametrize("case", list(EXTREMES))
def test_extreme_logits_give_finite_logprobs(case):
    rows, ids = EXTREMES[case]
    logits = torch.tensor(rows, device=test_device())
    logprobs, _, top_logprobs, _ = call(logits, ids, [len(ids)], 4)
    assert torch.isfinite(logprobs[1:]).all(), f"non-finite logprobs: {logprobs.tolist()}"
    assert torch.isfinite(top_logprobs[1:]).all(), f"non-finite top logprobs: {top_logprobs}"
    check(logits, ids, [len(ids)], 4, case)


@pytest.mark.clause("PT22.2", "PT22.6")
@pytest.mark.parametrize("top_k", [0, 5], ids=["top_k 0", "top_k V"])
def test_top_k_zero_and_the_whole_vocabulary(top_k):
    check(seeded(4, 5, seed=5), [1, 2, 3, 4], [1, 3], top_k, f"top_k={top_k}")


@pytest.mark.clause("PT22.2")
def test_no_tokens_give_empty_results():
    check(seeded(0, 4, seed=6), [], [], 2, "B = 0")
    check(seeded(0, 4, seed=6), [], [0, 0], 2, "two empty requests")


@pytest.mark.clause("PT22.4", "PT22.5", "PT22.6", "PT22.7")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_small_pack_matches_separate_padded_runs(data):
    lengths = data.draw(st.lists(st.integers(0, 4), max_size=4), label="lengths")
    V = data.draw(st.integers(1, 6), label="V")
    top_k = data.draw(st.integers(0, V), label="top_k")
    ids = data.draw(st.lists(st.integers(0, V - 1), min_size=sum(lengths), max_size=sum(lengths)))
    seed = data.draw(st.integers(0, 2**16), label="seed")

    check(seeded(sum(lengths), V, seed=seed), ids, lengths, top_k, f"{lengths}, top_k={top_k}")


@pytest.mark.clause("PT22.8")
def test_nothing_flows_from_one_request_into_the_next():
    lengths, ids = [3, 2, 2], [1, 2, 3, 0, 4, 2, 1]
    logits = seeded(7, 5, seed=7)
    before = call(logits, ids, lengths, 2)
    changed = logits.clone()
    # request 0's last row predicts nothing of request 0 and must not reach request 1
    changed[2] = torch.tensor([50.0, -50.0, 0.0, 9.0, -9.0], device=test_device())
    changed[5:] = -changed[5:]  # all of request 2
    changed_ids = [*ids[:5], 3, 3]

    after = call(changed, changed_ids, lengths, 2)

    for got, was in zip(after, before, strict=True):
        assert torch.equal(got[:5].nan_to_num(), was[:5].nan_to_num()), (
            "requests 0 and 1 changed when request 0's last row or request 2 changed"
        )


@pytest.mark.clause("PT22.12")
def test_the_inputs_are_only_read():
    logits, ids, offsets = seeded(5, 4, seed=8), long([1, 2, 3, 0, 1]), long([0, 2, 5])
    with inputs_untouched(logits=logits, token_ids=ids, offsets=offsets):
        drill.packed_prompt_logprobs(logits, ids, offsets, 2)


# ---- rejection: valid in every respect but one, before anything is computed ----


def valid_call() -> dict[str, object]:
    return {
        "logits": seeded(5, 4, seed=9),
        "token_ids": long([1, 2, 3, 0, 1]),
        "offsets": long([0, 2, 2, 5]),
        "top_k": 2,
    }


def rejected(argument: str, bad: object, values: tuple[object, ...] = ()) -> None:
    call = {**valid_call(), argument: bad}
    tensors = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**tensors):
        assert_rejects(
            lambda: drill.packed_prompt_logprobs(**call), BAD_VALUE, argument, values=values
        )


@pytest.mark.clause("PT22.10")
@pytest.mark.parametrize(
    "offsets",
    [[1, 2, 2, 5], [0, 2, 2, 4], [0, 2, 2, 6], [0, 3, 2, 5], [0, 2, 1, 5], []],
    ids=["first not 0", "last short of N", "last past N", "decreasing", "later decrease", "empty"],
)
def test_malformed_offsets_are_rejected(offsets):
    rejected("offsets", long(offsets))


@pytest.mark.clause("PT22.11")
@pytest.mark.parametrize("top_k", [-1, 5, 40], ids=["negative", "V + 1", "far past V"])
def test_a_top_k_outside_zero_to_v_is_rejected(top_k):
    rejected("top_k", top_k, values=(top_k,))
