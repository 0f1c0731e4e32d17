"""P12 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import (
    BAD_VALUE,
    WRONG_KIND,
    assert_rejects,
    candidate,
    test_device,
)
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P12_MODULE")

pytestmark = [pytest.mark.owner("p12"), pytest.mark.extension]


def floats(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32, device=test_device())


def no_beam_finished() -> torch.Tensor:
    return torch.zeros(2, 3, dtype=torch.bool, device=test_device())


def rejects(argument, *args, errors=BAD_VALUE, values=(), **kwargs):
    tensors = {f"arg{i}": a for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
    tensors = {name: t for name, t in tensors.items() if not t.is_meta}
    with inputs_untouched(**tensors):
        assert_rejects(lambda: drill.beam_step(*args, **kwargs), errors, argument, values=values)


@pytest.mark.clause("P12.9")
def test_logits_with_another_beam_count_are_rejected():
    rejects(("logits", "scores"), seeded(2, 3, seed=10), seeded(2, 4, 5, seed=11))


@pytest.mark.clause("P12.10")
def test_a_nan_score_in_a_later_row_is_rejected():
    scores = seeded(2, 3, seed=12)
    scores[1, 2] = math.nan
    rejects("scores", scores, seeded(2, 3, 5, seed=13))


@pytest.mark.clause("P12.12")
def test_finished_of_another_shape_is_rejected():
    finished = torch.zeros(2, 2, dtype=torch.bool, device=test_device())
    rejects("finished", seeded(2, 3, seed=14), seeded(2, 3, 5, seed=15), finished, eos_token_id=1)


@pytest.mark.clause("P12.13")
def test_an_eos_token_outside_the_vocabulary_is_rejected():
    finished = torch.zeros(2, 3, dtype=torch.bool, device=test_device())
    rejects("eos_token_id", seeded(2, 3, seed=16), seeded(2, 3, 5, seed=17), finished,
            eos_token_id=5, values=(5,))  # fmt: skip


@pytest.mark.clause("P12.8")
@pytest.mark.parametrize("bad", ["int64", "list", "1-D"])
def test_scores_of_another_kind_or_rank_are_rejected(bad):
    scores = seeded(2, 3, seed=38)
    scores = {"int64": scores.long(), "list": scores.tolist(), "1-D": scores.flatten()}[bad]
    logits = seeded(2, 3, 5, seed=39)
    if bad == "1-D":
        logits = logits.reshape(1, 6, 5)
    rejects("scores", scores, logits, errors=WRONG_KIND)


@pytest.mark.clause("P12.9")
@pytest.mark.parametrize("bad", ["int64", "2-D", "V=0", "another B"])
def test_logits_of_another_kind_or_shape_are_rejected(bad):
    scores, logits = seeded(2, 3, seed=40), seeded(2, 3, 5, seed=41)
    logits = {
        "int64": logits.long(),
        "2-D": logits[:, :, 0],
        "V=0": logits[:, :, :0],
        "another B": seeded(3, 3, 5, seed=41),
    }[bad]
    rejects(("logits", "scores"), scores, logits, errors=WRONG_KIND)


@pytest.mark.clause("P12.10")
def test_a_plus_inf_score_in_a_later_row_is_rejected():
    scores = seeded(2, 3, seed=42)
    scores[1, 0] = math.inf
    rejects("scores", scores, seeded(2, 3, 5, seed=43))


@pytest.mark.clause("P12.11")
@pytest.mark.parametrize("poison", ["nan", "+inf", "no finite logit"])
def test_logits_without_log_probabilities_in_a_later_row_are_rejected(poison):
    logits = seeded(2, 3, 5, seed=44)
    if poison == "no finite logit":
        logits[1, 2] = -math.inf
    else:
        logits[1, 2, 3] = float(poison.lstrip("+"))
    rejects("logits", seeded(2, 3, seed=45), logits)


@pytest.mark.clause("P12.12")
@pytest.mark.parametrize("bad", ["int 0/1", "list"])
def test_finished_that_is_not_a_bool_tensor_is_rejected(bad):
    finished = no_beam_finished()
    finished[1, 1] = True
    finished = finished.long() if bad == "int 0/1" else finished.tolist()
    rejects("finished", seeded(2, 3, seed=48), seeded(2, 3, 5, seed=49), finished,
            eos_token_id=1, errors=WRONG_KIND)  # fmt: skip


@pytest.mark.clause("P12.13")
@pytest.mark.parametrize("eos", [None, True, 1.0, -1], ids=repr)
def test_finished_without_a_valid_eos_token_is_rejected(eos):
    finished = no_beam_finished()
    finished[1, 0] = True
    values = (eos,) if eos == -1 else ()
    rejects("eos_token_id", seeded(2, 3, seed=50), seeded(2, 3, 5, seed=51), finished,
            eos_token_id=eos, errors=WRONG_KIND, values=values)  # fmt: skip


@pytest.mark.clause("P12.14")
@pytest.mark.parametrize("where", ["scores", "logits", "finished"])
def test_meta_tensors_are_rejected(where):
    args = {"scores": seeded(2, 3, seed=52), "logits": seeded(2, 3, 5, seed=53),
            "finished": no_beam_finished()}  # fmt: skip
    if where == "scores":
        args = {name: t.to("meta") for name, t in args.items()}
    else:
        args[where] = args[where].to("meta")
    named = ("scores", "logits", "finished") if where == "scores" else where  # all on meta
    rejects(named, args["scores"], args["logits"], args["finished"], eos_token_id=1)
