"""PT13 sequence_logprobs(logits [B,T,V], targets [B,T], valid [B,T]) -> (token [B,T], sums [B])."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT13_MODULE")

pytestmark = [pytest.mark.owner("pt13"), pytest.mark.contract]


def ids(values: list[list[int]], T: int = -1) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device()).reshape(len(values), T)


def mask(values: list[list[int]], T: int = -1) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bool, device=test_device()).reshape(len(values), T)


def loop_logprobs(logits: torch.Tensor, targets: list[list[int]], valid: list[list[int]]):
    """(token [B, T], sums [B]) in float64, one position at a time; masked positions are 0."""
    rows = logits.double().cpu().tolist()
    B, T = logits.shape[0], logits.shape[1]
    token = torch.zeros(B, T, dtype=torch.float64)
    for b in range(B):
        for t in range(T):
            if valid[b][t]:
                scores = rows[b][t]
                top = max(scores)
                if top == -math.inf:
                    token[b, t] = math.nan
                    continue
                lse = top + math.log(sum(math.exp(s - top) for s in scores))
                token[b, t] = scores[targets[b][t]] - lse
    sums = torch.tensor([sum(token[b].tolist()) for b in range(B)], dtype=torch.float64)
    return token, sums


def check(logits, targets, valid, what: str, *, atol: float = 1e-5) -> tuple:
    """Compare with the float64 oracle; fp32 results; masked positions exactly 0."""
    B, T = logits.shape[0], logits.shape[1]
    # the oracle first: the call's writes cannot reach it
    want_token, want_sums = loop_logprobs(logits, targets, valid)
    got_token, got_sums = drill.sequence_logprobs(logits, ids(targets, T), mask(valid, T))
    assert tuple(got_token.shape) == (B, T), f"{what}: token shape {tuple(got_token.shape)}"
    assert tuple(got_sums.shape) == (B,), f"{what}: sums shape {tuple(got_sums.shape)}"
    torch.testing.assert_close(
        got_token.double().cpu(), want_token, rtol=1e-5, atol=atol, msg=lambda m: f"{what}: {m}"
    )
    torch.testing.assert_close(
        got_sums.double().cpu(), want_sums, rtol=1e-5, atol=atol * max(T, 1),
        msg=lambda m: f"{what}: sums: {m}",
    )  # fmt: skip
    return got_token, got_sums


@pytest.mark.clause("PT13.2", "PT13.4")
def test_each_valid_position_gets_its_targets_logprob():
    logits = seeded(3, 4, 6, seed=1) * 3
    targets = [[1, 5, 0, 2], [3, 3, 4, 0], [5, 1, 2, 2]]
    check(logits, targets, [[1] * 4] * 3, "every position valid")


@pytest.mark.clause("PT13.4")
def test_the_target_at_t_is_scored_by_the_logits_at_t_without_a_shift():
    logits = torch.full((1, 3, 4), -5.0, device=test_device())
    logits[0, 0, 1] = logits[0, 1, 2] = logits[0, 2, 3] = 5.0
    token, _ = check(logits, [[1, 2, 3]], [[1, 1, 1]], "each step's target is its own argmax")
    assert bool((token > -0.01).all()), f"a shifted pairing: {token.tolist()}"


@pytest.mark.clause("PT13.4")
def test_repeated_targets_within_and_across_rows():
    logits = seeded(2, 5, 4, seed=2) * 2
    check(logits, [[2, 2, 2, 0, 2], [2, 2, 1, 2, 2]], [[1] * 5] * 2, "repeated target ids")


@pytest.mark.clause("PT13.4", "PT13.5")
def test_masked_positions_add_exactly_zero_in_a_later_row():
    logits = seeded(3, 5, 6, seed=3)
    logits[1, 3, 4] = -torch.inf  # a masked position whose target logit is -inf
    logits[2, 0, 1] = -torch.inf
    targets = [[0, 1, 2, 3, 4], [5, 0, 1, 4, 2], [1, 1, 3, 5, 0]]
    valid = [[1, 1, 1, 1, 1], [1, 1, 0, 0, 1], [0, 1, 1, 0, 1]]

    token, sums = check(logits, targets, valid, "mixed masks")

    for b, t in [(1, 2), (1, 3), (2, 0), (2, 3)]:
        assert token[b, t].item() == 0.0, f"masked position ({b}, {t}) holds {token[b, t].item()}"
    kept = token[1, [0, 1, 4]].double().sum().item()
    assert math.isclose(sums[1].item(), kept, rel_tol=1e-6), "row 1's sum is not its valid sum"


@pytest.mark.clause("PT13.2", "PT13.5")
def test_an_empty_sequence_has_zero_logprobs_and_a_zero_sum():
    logits = seeded(3, 4, 5, seed=4)
    logits[1, :, 2] = -torch.inf
    token, sums = check(logits, [[0, 1, 2, 3], [2, 2, 2, 2], [4, 3, 2, 1]],
                        [[1, 1, 0, 1], [0, 0, 0, 0], [1, 0, 1, 1]], "row 1 empty")  # fmt: skip
    assert sums[1].item() == 0.0 and bool((token[1] == 0).all()), f"row 1: {token[1].tolist()}"


@pytest.mark.clause("PT13.2")
@pytest.mark.parametrize(("B", "T"), [(2, 0), (0, 3)], ids=["T = 0", "B = 0"])
def test_empty_batches_and_sequences_keep_their_shapes(B, T):
    logits = seeded(B, T, 4, seed=5)
    _, sums = check(logits, [[0] * T for _ in range(B)], [[1] * T for _ in range(B)], f"{B}x{T}")
    assert bool((sums == 0).all())


@pytest.mark.clause("PT13.6")
def test_a_probability_that_underflows_still_has_its_finite_logprob():
    logits = torch.zeros(2, 2, 3, device=test_device())
    logits[1, 1] = torch.tensor([0.0, -200.0, 5.0])  # p(1) = e^-205 underflows fp32
    logits[1, 0] = torch.tensor([-1000.0, 0.0, 0.0])
    token, _ = check(logits, [[0, 1], [0, 1]], [[1, 1], [1, 1]], "underflowing probabilities")
    assert bool(token.isfinite().all()), f"an underflowed probability: {token.tolist()}"


@pytest.mark.clause("PT13.6")
@pytest.mark.parametrize("scale", [1e4, -1e4], ids=["huge logits", "hugely negative logits"])
def test_extreme_logits_stay_finite_and_right(scale):
    logits = seeded(2, 3, 5, seed=6) * 3 + scale
    targets, valid = [[0, 4, 2], [1, 1, 3]], [[1, 1, 1], [1, 0, 1]]
    token, _ = check(logits, targets, valid, f"logits near {scale}", atol=1e-5 + 1e-6 * abs(scale))
    assert bool(token.isfinite().all())


@pytest.mark.clause("PT13.6")
def test_adding_a_constant_to_a_positions_logits_changes_nothing():
    logits = seeded(2, 3, 4, seed=7)
    shifted = logits + torch.tensor([50.0, -30.0, 0.0], device=test_device())[None, :, None]
    first = drill.sequence_logprobs(logits, ids([[0, 1, 2], [3, 0, 1]]), mask([[1] * 3] * 2))
    second = drill.sequence_logprobs(shifted, ids([[0, 1, 2], [3, 0, 1]]), mask([[1] * 3] * 2))
    torch.testing.assert_close(second[0], first[0], rtol=1e-5, atol=1e-4)


@pytest.mark.clause("PT13.3", "PT13.7")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_low_precision_logits_are_accumulated_in_fp32(dtype):
    logits = (seeded(2, 64, 40, seed=8) * 3).to(dtype)
    targets = [[(7 * t + b) % 40 for t in range(64)] for b in range(2)]
    valid = [[int((t + b) % 5 != 0) for t in range(64)] for b in range(2)]
    token, sums = check(logits, targets, valid, f"{dtype} logits")
    assert token.dtype == sums.dtype == torch.float32, f"{token.dtype}, {sums.dtype}"


@pytest.mark.clause("PT13.7")
def test_fp16_logits_near_the_top_of_their_range():
    logits = torch.tensor([[[60000.0, 60000.0, 60000.0, 0.0]] * 2], device=test_device()).half()
    # log(1/3) and -6e4; fp32's step at 6e4 is 0.004, fp16's is 32 (where log(1/3) rounds to 0)
    token, _ = check(logits, [[1, 3]], [[1, 1]], "fp16 logits at 6e4", atol=0.01)
    assert token.dtype == torch.float32


@pytest.mark.clause("PT13.3")
def test_fp32_logits_give_fp32_results_on_their_device():
    logits = seeded(2, 3, 4, seed=9)
    token, sums = drill.sequence_logprobs(logits, ids([[0, 1, 2], [3, 2, 1]]), mask([[1] * 3] * 2))
    assert token.dtype == sums.dtype == torch.float32, f"{token.dtype}, {sums.dtype}"
    assert token.device == sums.device == logits.device


@pytest.mark.clause("PT13.2", "PT13.4", "PT13.5")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_small_batch_matches_the_loop_oracle(data):
    B, T, V = (data.draw(st.integers(lo, hi), label=n) for n, lo, hi in
               [("B", 0, 3), ("T", 0, 5), ("V", 1, 6)])  # fmt: skip
    logits = seeded(B, T, V, seed=data.draw(st.integers(0, 2**16), label="seed")) * 4
    targets = [[data.draw(st.integers(0, V - 1)) for _ in range(T)] for _ in range(B)]
    valid = [[data.draw(st.integers(0, 1)) for _ in range(T)] for _ in range(B)]
    for b in range(B):  # a masked position may point at a -inf logit (a banned token)
        for t in range(T):
            if not valid[b][t]:
                logits[b, t, targets[b][t]] = -torch.inf
    check(logits, targets, valid, f"B={B}, T={T}, V={V}, valid={valid}")


@pytest.mark.clause("PT13.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    logits, targets, valid = (
        seeded(2, 3, 4, seed=11),
        ids([[0, 3, 1], [2, 2, 0]]),
        mask([[1, 0, 1], [1, 1, 1]]),
    )
    assert_binds(drill.sequence_logprobs, logits, targets, valid)
    assert_binds(drill.sequence_logprobs, valid=valid, targets=targets, logits=logits)
    by_name = drill.sequence_logprobs(valid=valid, targets=targets, logits=logits)
    want_token, want_sums = loop_logprobs(logits, [[0, 3, 1], [2, 2, 0]], [[1, 0, 1], [1, 1, 1]])
    torch.testing.assert_close(by_name[0].double().cpu(), want_token, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(by_name[1].double().cpu(), want_sums, rtol=1e-5, atol=1e-5)


# ---- rejection: valid in every respect but one, before any work ----


@pytest.mark.clause("PT13.8")
@pytest.mark.parametrize(
    ("bad", "where"),
    [(-1, "masked"), (4, "masked"), (7, "masked"), (-2, "valid"), (4, "valid")],
)
def test_a_target_outside_the_vocabulary_is_rejected_even_where_masked(bad, where):
    logits, valid = seeded(3, 3, 4, seed=12), mask([[1, 1, 1], [1, 0, 1], [1, 1, 1]])
    row = [[0, 1, 2], [3, 0, 1], [2, 2, 3]]
    row[1][1 if where == "masked" else 2] = bad
    targets = ids(row)
    with inputs_untouched(logits=logits, targets=targets, valid=valid):
        assert_rejects(
            lambda: drill.sequence_logprobs(logits, targets, valid), BAD_VALUE, "targets",
            values=[bad],
        )  # fmt: skip
