"""PT37 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT37_MODULE")

pytestmark = [pytest.mark.owner("pt37"), pytest.mark.extension]


def valid_call() -> dict[str, object]:
    return {"x": seeded(3, 8, seed=1), "weight": seeded(5, 8, seed=2),
            "bias": seeded(5, seed=3), "world_size": 4}  # fmt: skip


def blocks(*widths: int) -> list:
    return [seeded(3, w, seed=10 + i) for i, w in enumerate(widths)]


@pytest.mark.clause("PT37.9")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("world_size", lambda: 3, BAD_VALUE),
        ("world_size", lambda: 0, BAD_VALUE),
        ("world_size", lambda: True, WRONG_KIND),
        ("world_size", lambda: 4.0, WRONG_KIND),
        ("x", lambda: seeded(3, 6, seed=4), BAD_VALUE),
        ("x", lambda: blocks(2, 2, 2), BAD_VALUE),
        ("x", lambda: blocks(2, 2, 2, 3), BAD_VALUE),
        ("x", lambda: [[0.0] * 8], WRONG_KIND),
        ("weight", lambda: seeded(8, seed=5), BAD_VALUE),
        ("bias", lambda: seeded(8, seed=6), BAD_VALUE),
    ],
    ids=["I=8 over 3 ranks", "world_size 0", "bool world_size", "float world_size",
         "x's I is not weight's", "3 shards for 4 ranks", "a shard of the wrong width",
         "a list of floats as x", "1-D weight", "bias of the wrong length"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if hasattr(t, "stride")}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.row_parallel_linear(**call), errors, argument)
