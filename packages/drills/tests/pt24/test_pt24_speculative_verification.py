"""PT24 accepted_prefix_lengths(draft_logprobs, target_logprobs, uniforms [B, K]) -> [B]."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT24_MODULE")

pytestmark = [pytest.mark.owner("pt24"), pytest.mark.contract]

INF = float("inf")
NAN = float("nan")


def floats(rows: list[list[float]], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.tensor(rows, dtype=dtype, device=test_device()).reshape(len(rows), -1)


def loop_prefixes(draft: torch.Tensor, target: torch.Tensor, uniforms: torch.Tensor) -> list[int]:
    """One row, one drafted token at a time, in Python floats: stop at the first rejection."""
    lengths = []
    rows = zip(draft.tolist(), target.tolist(), uniforms.tolist(), strict=True)
    for ld_row, lt_row, u_row in rows:
        kept = 0
        for ld, lt, u in zip(ld_row, lt_row, u_row, strict=True):
            if not u < math.exp(min(0.0, lt - ld)):  # accept with probability min(1, p_t/p_d)
                break
            kept += 1
        lengths.append(kept)
    return lengths


def check(draft, target, uniforms, what: str) -> list[int]:
    # the oracle first: the call's writes cannot reach it
    want = loop_prefixes(draft, target, uniforms)
    got = drill.accepted_prefix_lengths(draft, target, uniforms)
    B = draft.shape[0]
    assert isinstance(got, torch.Tensor), f"{what}: returned {type(got).__name__}"
    assert tuple(got.shape) == (B,), f"{what}: shape {tuple(got.shape)}, want {(B,)}"
    assert not got.is_floating_point() and got.dtype != torch.bool, f"{what}: dtype {got.dtype}"
    assert got.tolist() == want, f"{what}: accepted {got.tolist()}, want {want}"
    return want


def random_case(B: int, K: int, seed: int):
    """Draft logprobs in (-6, 0], target near them, uniforms from their own generator."""
    draft = -seeded(B, K, seed=seed).abs() * 2
    target = (draft + seeded(B, K, seed=seed + 1)).clamp(max=0.0)
    generator = torch.Generator().manual_seed(seed + 2)
    uniforms = torch.rand(B, K, generator=generator, dtype=torch.float64).float()
    return draft, target, uniforms.to(test_device())


# three rows: all accepted, first rejected, rejected at position 2
DRAFT = [[-1.0, -2.0, -0.5, -3.0], [-1.0, -1.0, -1.0, -1.0], [-2.0, -0.5, -1.0, -1.5]]
TARGET = [[-0.5, -2.0, -0.1, -3.5], [-3.0, -0.5, -0.5, -0.5], [-1.0, -0.7, -2.0, -1.0]]
UNIFORMS = [[0.9, 0.99, 0.5, 0.5], [0.5, 0.1, 0.1, 0.1], [0.3, 0.6, 0.5, 0.1]]


@pytest.mark.clause("PT24.2", "PT24.4")
def test_all_accepted_first_rejected_and_mid_rejection_rows():
    lengths = check(floats(DRAFT), floats(TARGET), floats(UNIFORMS), "three rows")
    assert lengths == [4, 0, 2], f"the oracle itself: {lengths}"


@pytest.mark.clause("PT24.4")
@pytest.mark.parametrize("row", [1, 2])
def test_a_rejection_in_a_later_row_stops_only_that_row(row):
    draft, target, uniforms = [[-1.0] * 3 for _ in range(3)], [[-1.0] * 3 for _ in range(3)], []
    uniforms = [[0.5] * 3 for _ in range(3)]
    target[row][1] = -2.0  # p_t / p_d = e^-1 = 0.37 < 0.5: rejected at position 1
    lengths = check(floats(draft), floats(target), floats(uniforms), f"row {row} rejects at 1")
    assert lengths[row] == 1 and lengths[0] == 3


@pytest.mark.clause("PT24.4")
def test_the_ratio_is_compared_with_each_positions_own_uniform():
    # ratio e^-1 = 0.368 everywhere: uniforms just under it accept, just over it reject
    draft = floats([[-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]])
    target = floats([[-2.0, -2.0, -2.0], [-2.0, -2.0, -2.0]])
    uniforms = floats([[0.30, 0.35, 0.40], [0.40, 0.30, 0.30]])
    assert check(draft, target, uniforms, "ratio 0.368") == [2, 0]


@pytest.mark.clause("PT24.4")
def test_a_ratio_above_one_always_accepts_and_a_target_probability_of_zero_never_does():
    draft = floats([[-5.0, -5.0], [-1.0, -1.0], [-1.0, -1.0], [0.0, 0.0]])
    target = floats([[-0.1, 0.0], [-INF, -1.0], [-1.0, -INF], [0.0, -1.0]])
    uniforms = floats([[0.999, 0.9999], [0.0, 0.0], [0.0, 0.0], [0.99, 0.3]])
    lengths = check(draft, target, uniforms, "ratio > 1, p_t = 0 and p_d = 1")
    assert lengths == [2, 0, 1, 2], f"the oracle itself: {lengths}"


@pytest.mark.clause("PT24.4", "PT24.5")
def test_tokens_after_the_first_rejection_are_never_counted():
    # row 0 rejects position 1 and would accept 2 and 3; row 1 rejects only its last
    draft = floats([[-1.0, -1.0, -1.0, -1.0], [-1.0, -1.0, -1.0, -1.0]])
    target = floats([[-1.0, -4.0, -0.5, -0.5], [-1.0, -1.0, -1.0, -4.0]])
    uniforms = floats([[0.5, 0.5, 0.1, 0.1], [0.5, 0.5, 0.5, 0.5]])
    assert check(draft, target, uniforms, "accepts after a rejection") == [1, 3]


@pytest.mark.clause("PT24.2")
def test_no_drafted_tokens_gives_zero_per_row():
    empty = torch.zeros(3, 0, device=test_device())
    assert check(empty, empty.clone(), empty.clone(), "K = 0") == [0, 0, 0]


@pytest.mark.clause("PT24.2")
def test_an_empty_batch_gives_an_empty_result():
    empty = torch.zeros(0, 4, device=test_device())
    assert check(empty, empty.clone(), empty.clone(), "B = 0") == []


@pytest.mark.clause("PT24.6")
def test_probabilities_below_the_float_range_are_compared_in_log_space():
    # p_d = e^-1000, p_t = e^-999: both are 0 as floats, their ratio e > 1 accepts
    draft = floats([[-1000.0, -1000.0], [-1.0, -1.0]])
    target = floats([[-999.0, -999.5], [-1.0, -1.0]])
    uniforms = floats([[0.99, 0.9], [0.5, 0.5]])
    assert check(draft, target, uniforms, "log-probs near -1000") == [2, 2]


@pytest.mark.clause("PT24.6")
def test_a_ratio_below_one_between_underflowing_probabilities_is_still_exact():
    # p_t / p_d = e^-1 = 0.368 although both are 0 as floats: 0.3 accepts, 0.5 rejects
    draft = floats([[-1.0, -1.0], [-300.0, -300.0], [-200.0, -200.0]])
    target = floats([[-1.0, -1.0], [-301.0, -301.0], [-201.0, -201.0]])
    uniforms = floats([[0.5, 0.5], [0.3, 0.5], [0.3, 0.3]])
    assert check(draft, target, uniforms, "log-probs near -300 and -200") == [2, 1, 2]


@pytest.mark.clause("PT24.3", "PT24.4")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_any_floating_dtype_gives_integer_lengths_on_the_inputs_device(dtype):
    draft, target, uniforms = (floats(rows, dtype) for rows in (DRAFT, TARGET, UNIFORMS))
    got = drill.accepted_prefix_lengths(draft, target, uniforms)
    assert got.device == draft.device, f"lengths on {got.device}, inputs on {draft.device}"
    assert not got.is_floating_point() and got.dtype != torch.bool, f"dtype {got.dtype}"
    assert got.tolist() == [4, 0, 2], f"{dtype}: {got.tolist()}"


@pytest.mark.clause("PT24.4", "PT24.5")
@pytest.mark.parametrize("seed", [1, 7, 19, 42])
def test_random_rows_match_the_per_row_loop(seed):
    check(*random_case(6, 5, seed), f"seed {seed}")


@pytest.mark.clause("PT24.7")
def test_reordering_or_removing_rows_never_changes_a_rows_length():
    draft, target, uniforms = random_case(6, 5, seed=3)
    whole = drill.accepted_prefix_lengths(draft, target, uniforms).tolist()
    order = torch.tensor([4, 1, 5, 0, 3, 2], device=test_device())
    moved = drill.accepted_prefix_lengths(draft[order], target[order], uniforms[order]).tolist()
    assert moved == [whole[i] for i in order.tolist()], f"reordered {moved}, whole {whole}"
    kept = torch.tensor([5, 2], device=test_device())
    alone = drill.accepted_prefix_lengths(draft[kept], target[kept], uniforms[kept]).tolist()
    assert alone == [whole[5], whole[2]], f"rows 5 and 2 alone {alone}, whole {whole}"


@pytest.mark.clause("PT24.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    draft, target, uniforms = floats(DRAFT), floats(TARGET), floats(UNIFORMS)
    assert_binds(drill.accepted_prefix_lengths, draft, target, uniforms)
    assert_binds(
        drill.accepted_prefix_lengths,
        uniforms=uniforms,
        target_logprobs=target,
        draft_logprobs=draft,
    )
    by_name = drill.accepted_prefix_lengths(
        uniforms=uniforms, target_logprobs=target, draft_logprobs=draft
    )
    assert by_name.tolist() == [4, 0, 2], f"called by name: {by_name.tolist()}"


# ---- rejection: valid in every respect but one, before any work ----


def rejected(draft, target, uniforms, argument: str, values=()) -> None:
    with inputs_untouched(draft_logprobs=draft, target_logprobs=target, uniforms=uniforms):
        assert_rejects(
            lambda: drill.accepted_prefix_lengths(draft, target, uniforms),
            BAD_VALUE,
            argument,
            values=values,
        )


@pytest.mark.clause("PT24.8")
@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, NAN], ids=["negative", "one", "above one", "NaN"])
@pytest.mark.parametrize("row", [1, 2])
def test_a_uniform_outside_zero_one_in_any_row_is_rejected(bad, row):
    uniforms = [list(r) for r in UNIFORMS]
    uniforms[row][3] = bad
    values = () if math.isnan(bad) else (bad,)
    rejected(floats(DRAFT), floats(TARGET), floats(uniforms), "uniforms", values)


@pytest.mark.clause("PT24.9")
@pytest.mark.parametrize("bad", [-INF, 0.5, NAN], ids=["p_d = 0", "p_d > 1", "NaN"])
@pytest.mark.parametrize("row", [1, 2])
def test_an_impossible_draft_probability_in_any_row_is_rejected(bad, row):
    draft = [list(r) for r in DRAFT]
    draft[row][3] = bad  # after this row's first rejection: still checked
    rejected(floats(draft), floats(TARGET), floats(UNIFORMS), "draft_logprobs")
