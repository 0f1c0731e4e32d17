"""P12 beam_step(scores, logits, finished=None, eos_token_id=None) -> (scores, tokens, parents)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import assert_close, assert_rejects, boundary_settings, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

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


def test_the_k_best_extensions_match_the_loop_oracle():
    scores = seeded(2, 3, seed=1) - 2
    logits = seeded(2, 3, 7, seed=2) * 2

    got_scores, tokens, parents = step(scores, logits)

    want_scores, want_tokens, want_parents = loop_beam_step(scores, logits)
    assert (tokens, parents) == (want_tokens, want_parents)
    assert_close(got_scores.double(), torch.tensor(want_scores, dtype=torch.float64,
                 device=got_scores.device), "beam scores")  # fmt: skip


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

    got_scores, tokens, parents = step(scores, logits)

    want_scores, want_tokens, want_parents = loop_beam_step(scores, logits)
    assert (tokens, parents) == (want_tokens, want_parents)
    assert_close(got_scores.double(), torch.tensor(want_scores, dtype=torch.float64,
                 device=got_scores.device), "beam scores")  # fmt: skip


def test_scores_are_log_probabilities_not_raw_logits():
    scores = floats([[-1.0, -1.5]])
    logits = seeded(1, 2, 5, seed=3)
    shifted = logits + floats([[[10.0], [-4.0]]])  # a constant per beam: same distribution

    got = step(scores, logits)
    moved = step(scores, shifted)

    assert moved[1:] == got[1:]
    assert_close(moved[0], got[0], "scores after shifting each beam's logits")


def test_ties_go_to_the_lower_parent_then_the_lower_token():
    scores = floats([[-1.0, -1.0, -5.0]])
    same = [0.0, 2.0, 2.0, 1.0]
    logits = floats([[same, same, [9.0, 0.0, 0.0, 0.0]]])

    _, tokens, parents = step(scores, logits)

    assert parents == [[0, 0, 1]] and tokens == [[1, 2, 1]]


def test_the_first_step_expands_only_the_live_beam():
    scores = floats([[0.0, -math.inf, -math.inf]])
    logits = seeded(1, 3, 5, seed=4)

    got_scores, tokens, parents = step(scores, logits)

    assert parents == [[0, 0, 0]]
    assert tokens == [sorted(range(5), key=lambda v: -float(logits[0, 0, v]))[:3]]
    assert torch.isfinite(got_scores).all()


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

    got_scores, tokens, parents = step(scores, logits, finished, eos_token_id=eos)

    want_scores, want_tokens, want_parents = loop_beam_step(scores, logits, finished, eos)
    assert (tokens, parents) == (want_tokens, want_parents)
    assert_close(got_scores.double(), torch.tensor(want_scores, dtype=torch.float64,
                 device=got_scores.device), "scores with finished beams")  # fmt: skip


def test_new_scores_are_sorted_descending():
    new_scores, _, _ = step(seeded(3, 4, seed=6), seeded(3, 4, 9, seed=7))

    assert torch.equal(new_scores, new_scores.sort(dim=-1, descending=True).values)


def test_the_inputs_are_not_written():
    scores, logits = seeded(2, 3, seed=8), seeded(2, 3, 5, seed=9)
    finished = torch.tensor([[False, True, False], [True, False, False]], device=test_device())

    with inputs_untouched(scores=scores, logits=logits, finished=finished):
        step(scores, logits, finished, eos_token_id=0)


# ---- rejection: valid in every respect but one ----


def rejects(argument, *args, **kwargs):
    tensors = {f"arg{i}": a for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
    with inputs_untouched(**tensors):
        assert_rejects(lambda: drill.beam_step(*args, **kwargs), (ValueError, TypeError), argument)


def test_logits_with_another_beam_count_are_rejected():
    rejects(("logits", "scores"), seeded(2, 3, seed=10), seeded(2, 4, 5, seed=11))


def test_a_nan_score_in_a_later_row_is_rejected():
    scores = seeded(2, 3, seed=12)
    scores[1, 2] = math.nan
    rejects("scores", scores, seeded(2, 3, 5, seed=13))


def test_finished_of_another_shape_is_rejected():
    finished = torch.zeros(2, 2, dtype=torch.bool, device=test_device())
    rejects("finished", seeded(2, 3, seed=14), seeded(2, 3, 5, seed=15), finished, eos_token_id=1)


def test_an_eos_token_outside_the_vocabulary_is_rejected():
    finished = torch.zeros(2, 3, dtype=torch.bool, device=test_device())
    rejects("eos_token_id", seeded(2, 3, seed=16), seeded(2, 3, 5, seed=17), finished,
            eos_token_id=5)  # fmt: skip
