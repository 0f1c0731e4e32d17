"""PT36 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT36_MODULE")

pytestmark = [pytest.mark.owner("pt36"), pytest.mark.extension]


def valid_call() -> dict[str, object]:
    return {"x": seeded(3, 4, seed=1), "weight": seeded(8, 4, seed=2),
            "bias": seeded(8, seed=3), "world_size": 2}  # fmt: skip


@pytest.mark.clause("PT36.10")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("world_size", lambda: 0, BAD_VALUE),
        ("world_size", lambda: -2, BAD_VALUE),
        ("world_size", lambda: True, WRONG_KIND),
        ("world_size", lambda: 2.0, WRONG_KIND),
        ("weight", lambda: seeded(8, 5, seed=4), BAD_VALUE),
        ("weight", lambda: seeded(8, seed=4), BAD_VALUE),
        ("bias", lambda: seeded(4, seed=5), BAD_VALUE),
        ("x", lambda: [[0.0] * 4], WRONG_KIND),
    ],
    ids=["world_size 0", "negative world_size", "bool world_size", "float world_size",
         "weight's I is not x's", "1-D weight", "bias of the wrong length", "a list as x"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if hasattr(t, "stride")}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.column_parallel_linear(**call), errors, argument)
