"""P12 beam_step(scores, logits, finished=None, eos_token_id=None) -> (scores, tokens, parents)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import (
    assert_close,
    boundary_settings,
    candidate,
    test_device,
)
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_P12_MODULE")

pytestmark = [pytest.mark.owner("p12"), pytest.mark.contract]


def loop_beam_step(scores, logits, finished=None, eos=None):
    """The oracle: list every (score, parent, token) candidate of a row in float64, sort by
    score descending, then parent, then token, keep K."""
    B, K = scores.shape
    out_scores, out_tokens, out_parents = [], [], []
    for b in range(B):
        candidates = []
        for k in range(K):
            base = float(scores[b, k])
            if finished is not None and bool(finished[b, k]):
                candidates.append((base, k, eos))
                continue
            row = logits[b, k].double().tolist()
            top = max(row)
            log_total = top + math.log(sum(math.exp(x - top) for x in row))
            candidates.extend((base + x - log_total, k, v) for v, x in enumerate(row))
        best = sorted(candidates, key=lambda c: (-c[0], c[1], c[2]))[:K]
        out_scores.append([c[0] for c in best])
        out_parents.append([c[1] for c in best])
        out_tokens.append([c[2] for c in best])
    return out_scores, out_tokens, out_parents


def step(scores, logits, *args, **kwargs):
    result = drill.beam_step(scores, logits, *args, **kwargs)
    assert len(result) == 3, "beam_step returns (scores, tokens, parents)"
    new_scores, tokens, parents = result
    shape = tuple(scores.shape)
    for name, tensor in (("scores", new_scores), ("tokens", tokens), ("parents", parents)):
        assert tuple(tensor.shape) == shape, f"{name}: shape {tuple(tensor.shape)} != {shape}"
    assert not tokens.is_floating_point() and not parents.is_floating_point(), "integer ids"
    return new_scores, tokens.tolist(), parents.tolist()


def floats(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32, device=test_device())


@pytest.mark.clause("P12.2", "P12.4")
def test_the_k_best_extensions_match_the_loop_oracle():
    scores = seeded(2, 3, seed=1) - 2
    logits = seeded(2, 3, 7, seed=2) * 2

    # the oracle first: the call's writes cannot reach it
    want_scores, want_tokens, want_parents = loop_beam_step(scores, logits)
    got_scores, tokens, parents = step(scores, logits)

    assert (tokens, parents) == (want_tokens, want_parents)
    assert_close(got_scores.double(), torch.tensor(want_scores, dtype=torch.float64,
                 device=got_scores.device), "beam scores")  # fmt: skip


@pytest.mark.clause("P12.2", "P12.4", "P12.5")
@boundary_settings(20)
@given(
    B=st.integers(1, 3),
    K=st.integers(1, 4),
    V=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_any_small_shape_matches_the_loop_oracle(B, K, V, seed):
    scores = seeded(B, K, seed=seed) * 3
    logits = seeded(B, K, V, seed=seed + 1) * 3

    # the oracle first: the call's writes cannot reach it
    want_scores, want_tokens, want_parents = loop_beam_step(scores, logits)
    got_scores, tokens, parents = step(scores, logits)

    assert (tokens, parents) == (want_tokens, want_parents)
    assert_close(got_scores.double(), torch.tensor(want_scores, dtype=torch.float64,
                 device=got_scores.device), "beam scores")  # fmt: skip


@pytest.mark.clause("P12.4")
def test_scores_are_log_probabilities_not_raw_logits():
    scores = floats([[-1.0, -1.5]])
    logits = seeded(1, 2, 5, seed=3)
    shifted = logits + floats([[[10.0], [-4.0]]])  # a constant per beam: same distribution

    got = step(scores, logits)
    moved = step(scores, shifted)

    assert moved[1:] == got[1:]
    assert_close(moved[0], got[0], "scores after shifting each beam's logits")


@pytest.mark.clause("P12.5")
def test_ties_go_to_the_lower_parent_then_the_lower_token():
    scores = floats([[-1.0, -1.0, -5.0]])
    same = [0.0, 2.0, 2.0, 1.0]
    logits = floats([[same, same, [9.0, 0.0, 0.0, 0.0]]])

    _, tokens, parents = step(scores, logits)

    assert parents == [[0, 0, 1]] and tokens == [[1, 2, 1]]


@pytest.mark.clause("P12.4")
def test_the_first_step_expands_only_the_live_beam():
    scores = floats([[0.0, -math.inf, -math.inf]])
    logits = seeded(1, 3, 5, seed=4)

    # the oracle first: the call's writes cannot reach it
    logits_given = logits.clone()
    got_scores, tokens, parents = step(scores, logits)

    assert parents == [[0, 0, 0]]
    assert tokens == [sorted(range(5), key=lambda v: -float(logits_given[0, 0, v]))[:3]]
    assert torch.isfinite(got_scores).all()


@pytest.mark.clause("P12.6")
def test_a_finished_beam_carries_eos_at_its_score_and_is_not_expanded():
    scores = floats([[-0.5, -0.7, -9.0]])
    logits = seeded(1, 3, 4, seed=5)
    finished = torch.tensor([[True, False, True]], device=test_device())

    got_scores, tokens, parents = step(scores, logits, finished, eos_token_id=3)

    want_scores, want_tokens, want_parents = loop_beam_step(scores, logits, finished, eos=3)
    assert (tokens, parents) == (want_tokens, want_parents)
    assert parents[0].count(0) == 1 and tokens[0][parents[0].index(0)] == 3
    assert 2 not in parents[0], "a finished beam far behind must drop out"
    assert_close(got_scores.double(), torch.tensor(want_scores, dtype=torch.float64,
                 device=got_scores.device), "scores with a finished beam")  # fmt: skip


@pytest.mark.clause("P12.6")
@boundary_settings(20)
@given(data=st.data())
def test_any_mix_of_finished_and_live_beams_matches_the_loop_oracle(data):
    B, K, V = (data.draw(st.integers(1, n), label=name) for n, name in ((3, "B"), (4, "K"),
               (5, "V")))  # fmt: skip
    seed = data.draw(st.integers(0, 2**16), label="seed")
    flags = data.draw(st.lists(st.booleans(), min_size=B * K, max_size=B * K), label="finished")
    eos = data.draw(st.integers(0, V - 1), label="eos_token_id")
    scores, logits = seeded(B, K, seed=seed) * 2, seeded(B, K, V, seed=seed + 1) * 2
    finished = torch.tensor(flags, device=test_device()).reshape(B, K)

    # the oracle first: the call's writes cannot reach it
    want_scores, want_tokens, want_parents = loop_beam_step(scores, logits, finished, eos)
    got_scores, tokens, parents = step(scores, logits, finished, eos_token_id=eos)

    assert (tokens, parents) == (want_tokens, want_parents)
    assert_close(got_scores.double(), torch.tensor(want_scores, dtype=torch.float64,
                 device=got_scores.device), "scores with finished beams")  # fmt: skip


@pytest.mark.clause("P12.4")
def test_new_scores_are_sorted_descending():
    new_scores, _, _ = step(seeded(3, 4, seed=6), seeded(3, 4, 9, seed=7))

    assert torch.equal(new_scores, new_scores.sort(dim=-1, descending=True).values)


@pytest.mark.clause("P12.15")
def test_the_inputs_are_not_written():
    scores, logits = seeded(2, 3, seed=8), seeded(2, 3, 5, seed=9)
    finished = torch.tensor([[False, True, False], [True, False, False]], device=test_device())

    with inputs_untouched(scores=scores, logits=logits, finished=finished):
        step(scores, logits, finished, eos_token_id=0)


def no_beam_finished() -> torch.Tensor:
    return torch.zeros(2, 3, dtype=torch.bool, device=test_device())


@pytest.mark.clause("P12.1")
def test_the_signature_takes_the_documented_arguments():
    scores, logits = seeded(2, 3, seed=30), seeded(2, 3, 5, seed=31)
    finished = no_beam_finished()

    assert_binds(drill.beam_step, scores, logits)
    assert_binds(drill.beam_step, scores, logits, finished, eos_token_id=1)
    assert step(scores, logits, finished, eos_token_id=1)[1:] == step(scores, logits)[1:]


@pytest.mark.clause("P12.3")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_scores_are_fp32_or_wider_and_ids_are_integers(dtype):
    scores, logits = seeded(2, 3, seed=32).to(dtype), seeded(2, 3, 5, seed=33).to(dtype)

    new_scores, tokens, parents = drill.beam_step(scores, logits)

    assert new_scores.dtype in (torch.float32, torch.float64), f"scores are {new_scores.dtype}"
    for name, ids in (("tokens", tokens), ("parents", parents)):
        assert not ids.is_floating_point() and not ids.is_complex(), f"{name}: {ids.dtype}"
        assert ids.dtype != torch.bool, f"{name} are bools"


@pytest.mark.clause("P12.4")
def test_half_inputs_match_the_loop_oracle_on_their_values():
    scores = (seeded(2, 3, seed=34) - 2).to(torch.bfloat16)
    logits = (seeded(2, 3, 7, seed=35) * 2).to(torch.bfloat16)

    # the oracle first: the call's writes cannot reach it
    want_scores, want_tokens, want_parents = loop_beam_step(scores, logits)
    got_scores, tokens, parents = step(scores, logits)

    assert (tokens, parents) == (want_tokens, want_parents)
    want = torch.tensor(want_scores, dtype=torch.float64, device=got_scores.device)
    assert_close(got_scores.double(), want, "beam scores of bf16 inputs")


@pytest.mark.clause("P12.5")
def test_ties_on_a_later_row_go_to_the_lower_flat_index():
    scores = floats([[-3.0, -1.0, -2.0], [-1.0, -1.0, -1.0]])
    same = [1.0, 1.0, 0.0, 1.0]
    logits = floats([[[0.0, 1.0, 2.0, 3.0]] * 3, [same, same, same]])

    _, tokens, parents = step(scores, logits)

    assert parents[1] == [0, 0, 0] and tokens[1] == [0, 1, 3]


@pytest.mark.clause("P12.5", "P12.6")
def test_a_finished_beam_tied_with_a_live_candidate_follows_the_tie_rule():
    # Row 1: beam 1 is finished at -1.0; beam 0's best candidate also scores -1.0 exactly
    # (its logits make token 0 certain), so the lower parent (beam 0) comes first.
    scores = floats([[-0.5, -0.6, -0.7], [-1.0, -1.0, -9.0]])
    logits = floats([[[0.0, 1.0, 2.0]] * 3, [[0.0, -math.inf, -math.inf], [5.0, 0.0, 1.0],
                     [0.0, 0.0, 0.0]]])  # fmt: skip
    finished = torch.tensor([[False] * 3, [False, True, False]], device=test_device())

    got_scores, tokens, parents = step(scores, logits, finished, eos_token_id=2)

    assert parents[1][:2] == [0, 1] and tokens[1][:2] == [0, 2]
    assert got_scores[1, :2].tolist() == [-1.0, -1.0]


@pytest.mark.clause("P12.6")
def test_a_finished_beam_beaten_by_k_candidates_drops_out():
    scores = floats([[-0.1, -0.2], [-0.1, -20.0]])
    logits = floats([[[0.0, 0.0, 0.0]] * 2, [[9.0, 9.0, 0.0], [0.0, 9.0, 0.0]]])
    finished = torch.tensor([[False, False], [False, True]], device=test_device())

    _, tokens, parents = step(scores, logits, finished, eos_token_id=2)

    assert parents[1] == [0, 0] and tokens[1] == [0, 1], "row 1 keeps beam 0's two best"
    _, want_tokens, want_parents = loop_beam_step(scores, logits, finished, eos=2)
    assert (tokens, parents) == (want_tokens, want_parents)


@pytest.mark.clause("P12.6")
def test_a_finished_beam_keeps_exactly_one_candidate_whatever_its_logits():
    scores = floats([[-0.3, -0.2, -0.1]])
    logits = floats([[[0.0, 0.0, 0.0, 0.0]] * 3])
    finished = torch.tensor([[False, False, True]], device=test_device())

    got_scores, tokens, parents = step(scores, logits, finished, eos_token_id=1)

    assert parents[0].count(2) == 1, "the finished beam multiplied"
    assert (parents[0][0], tokens[0][0]) == (2, 1)
    assert got_scores[0, 0].item() == pytest.approx(-0.1)


@pytest.mark.clause("P12.7")
def test_a_row_is_ranked_the_same_alone_and_in_a_batch():
    scores = seeded(3, 3, seed=36) * floats([[1.0], [10.0], [0.1]]) - 1
    logits = seeded(3, 3, 6, seed=37) * 2

    batched = step(scores, logits)

    for b in range(3):
        alone = step(scores[b : b + 1].clone(), logits[b : b + 1].clone())
        assert (alone[1], alone[2]) == ([batched[1][b]], [batched[2][b]]), f"row {b}"
        assert_close(alone[0], batched[0][b : b + 1], f"row {b} scores")


@pytest.mark.clause("P12.6")
def test_a_finished_beam_may_hold_logits_with_no_finite_value():
    scores, logits = seeded(2, 3, seed=46), seeded(2, 3, 5, seed=47)
    logits[1, 2] = -math.inf
    finished = torch.tensor([[False] * 3, [False, False, True]], device=test_device())

    # the oracle first: the call's writes cannot reach it
    _, want_tokens, want_parents = loop_beam_step(scores, logits, finished, eos=4)
    _, tokens, parents = step(scores, logits, finished, eos_token_id=4)

    assert (tokens, parents) == (want_tokens, want_parents)


@pytest.mark.clause("P12.5")
def test_a_wide_tie_keeps_flat_index_order():
    # 4 beams x 64 tokens all tied in row 1: an unstable sort of 256 equal candidates
    # returns them in no particular order; the tie rule wants flat indices 0, 1, 2, 3.
    scores = floats([[-1.0, -2.0, -3.0, -4.0], [-1.0, -1.0, -1.0, -1.0]])
    logits = torch.zeros(2, 4, 64, device=test_device())
    logits[0, :, ::5] = 1.0

    _, tokens, parents = step(scores, logits)

    assert parents[1] == [0, 0, 0, 0] and tokens[1] == [0, 1, 2, 3]
    assert parents[0] == [0, 0, 0, 0] and tokens[0] == [0, 5, 10, 15]
