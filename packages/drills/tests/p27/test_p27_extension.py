"""P27 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import WRONG_KIND, assert_rejects, candidate
from gptlab_testkit.oracles import seeded

drill = candidate("DRILL_P27_MODULE")

pytestmark = [pytest.mark.owner("p27"), pytest.mark.extension]


def rows(*sizes: int, seed: int = 0) -> list[torch.Tensor]:
    return [seeded(n, 8, seed=seed + i) for i, n in enumerate(sizes)]


@pytest.mark.clause("P27.11")
def test_a_function_that_is_not_callable_is_rejected():
    assert_rejects(lambda: drill.compile_guard_probe("x + 1", rows(2), backend="eager"),
                   WRONG_KIND, "fn")  # fmt: skip


@pytest.mark.clause("P27.12")
@pytest.mark.parametrize(
    "inputs",
    [[], [seeded(2, 8, seed=5), [[1.0, 2.0]]]],
    ids=["no calls", "call 1 is not a tensor"],
)
def test_inputs_that_are_not_calls_of_tensors_are_rejected_before_fn_runs(inputs):
    ran = []

    def pure(x):
        ran.append(1)
        return x + 1

    assert_rejects(lambda: drill.compile_guard_probe(pure, inputs, backend="eager"),
                   WRONG_KIND, "inputs")  # fmt: skip
    assert not ran, "fn ran before the inputs were rejected"


@pytest.mark.clause("P27.13")
@pytest.mark.parametrize("dynamic", ["yes", 0.5], ids=["a string", "a float"])
def test_a_dynamic_other_than_true_false_or_none_is_rejected_before_fn_runs(dynamic):
    ran = []

    def pure(x):
        ran.append(1)
        return x + 1

    assert_rejects(
        lambda: drill.compile_guard_probe(pure, rows(2), dynamic=dynamic, backend="eager"),
        WRONG_KIND,
        "dynamic",
        values=(dynamic,),
    )
    assert not ran, "fn ran before dynamic was rejected"
