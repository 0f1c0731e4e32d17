"""P25 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import (
    BAD_VALUE,
    WRONG_KIND,
    assert_rejects,
    candidate,
)
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P25_MODULE")

pytestmark = [pytest.mark.owner("p25"), pytest.mark.extension]


class Expert:
    """Row-wise and distinct per expert: f_e(h) = h * (e + 1) + e; records every call."""

    def __init__(self, e: int) -> None:
        self.e, self.calls = e, []

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        self.calls.append(h.detach().clone())
        return h * (self.e + 1) + self.e

    @property
    def rows(self) -> list[torch.Tensor]:
        """Every call that received tokens (a call with zero rows may be skipped)."""
        return [h for h in self.calls if h.shape[0]]


def experts(E: int) -> list[Expert]:
    return [Expert(e) for e in range(E)]


def assert_refused(argument, bad, errors, named, values=()):
    call = {**valid_call(), argument: bad}
    tensors = {n: call[n] for n in ("x", "router_logits") if isinstance(call[n], torch.Tensor)}
    with inputs_untouched(**tensors):
        assert_rejects(lambda: drill.top_k_moe(*call.values()), errors, named, values=values)
    pool = call["experts"] if isinstance(call["experts"], list) else []
    assert not any(getattr(e, "calls", None) for e in pool), "an expert ran before the check"


def valid_call() -> dict:
    return {"x": seeded(4, 3, seed=14), "router_logits": seeded(4, 3, seed=15),
            "experts": experts(3), "k": 2, "capacity": 2}  # fmt: skip


@pytest.mark.clause("P25.9")
@pytest.mark.parametrize("rows", [5, 3], ids=["more rows", "fewer rows"])
def test_router_logits_for_another_n_are_rejected(rows):
    logits = seeded(rows, 3, seed=16)
    assert_refused("router_logits", logits, BAD_VALUE, ("router_logits", "x"), values=(rows,))


@pytest.mark.clause("P25.10")
@pytest.mark.parametrize("count", [2, 4], ids=["too few experts", "too many experts"])
def test_a_number_of_experts_other_than_e_is_rejected(count):
    assert_refused("experts", experts(count), BAD_VALUE, ("experts", "router_logits"), (count,))


@pytest.mark.clause("P25.11")
@pytest.mark.parametrize(
    ("k", "errors"),
    [(0, BAD_VALUE), (4, BAD_VALUE), (-1, BAD_VALUE), (True, WRONG_KIND), (2.0, WRONG_KIND)],
    ids=["zero", "past E", "negative", "a bool", "a float"],
)
def test_k_outside_one_to_e_or_not_an_int_is_rejected(k, errors):
    assert_refused("k", k, errors, "k", values=(k,) if errors is BAD_VALUE else ())


@pytest.mark.clause("P25.12")
@pytest.mark.parametrize(
    ("capacity", "errors"),
    [(-1, BAD_VALUE), (-5, BAD_VALUE), (False, WRONG_KIND), (1.5, WRONG_KIND)],
    ids=["minus one", "minus five", "a bool", "a float"],
)
def test_a_negative_capacity_or_one_not_an_int_is_rejected(capacity, errors):
    values = (capacity,) if errors is BAD_VALUE else ()
    assert_refused("capacity", capacity, errors, "capacity", values=values)
