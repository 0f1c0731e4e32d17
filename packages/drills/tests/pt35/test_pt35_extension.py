"""PT35 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT35_MODULE")

pytestmark = [pytest.mark.owner("pt35"), pytest.mark.extension]


def valid_call() -> dict[str, object]:
    return {
        "queries": seeded(2, 3, 2, 4, seed=1),
        "keys": seeded(2, 3, 2, 4, seed=2),
        "values": seeded(2, 3, 2, 4, seed=3),
        "k_cache": seeded(2, 2, 6, 4, seed=4),
        "v_cache": seeded(2, 2, 6, 4, seed=5),
        "filled": 1,
    }


@pytest.mark.clause("PT35.12")
@pytest.mark.parametrize(
    ("argument", "bad"),
    [
        ("filled", lambda: True),
        ("filled", lambda: 1.0),
        ("k_cache", lambda: seeded(3, 2, 6, 4, seed=6)),
        ("v_cache", lambda: seeded(2, 1, 6, 4, seed=6)),
        ("k_cache", lambda: seeded(2, 2, 6, 5, seed=6)),
        ("keys", lambda: seeded(2, 2, 2, 4, seed=6)),
        ("values", lambda: seeded(2, 3, 2, 3, seed=6)),
        ("v_cache", lambda: seeded(2, 2, 6, 4, seed=6, dtype=torch.float64)),
    ],
    ids=["bool filled", "float filled", "cache B differs", "cache H differs", "cache D differs",
         "keys T differs", "values D differs", "f64 v_cache"],
)  # fmt: skip
def test_inputs_the_contract_leaves_undefined_are_rejected_before_any_write(argument, bad):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.fixed_cache_decode(**call), BAD_VALUE, argument)


@pytest.mark.clause("PT35.12")
def test_zero_steps_return_an_empty_output_and_write_nothing():
    call = valid_call()
    empty = {
        name: seeded(2, 0, 2, 4, seed=i) for i, name in enumerate(("queries", "keys", "values"))
    }
    call.update(empty)
    caches = {"k_cache": call["k_cache"], "v_cache": call["v_cache"]}
    with inputs_untouched(**caches):
        got = drill.fixed_cache_decode(**call)
    assert tuple(got.shape) == (2, 0, 2, 4)
