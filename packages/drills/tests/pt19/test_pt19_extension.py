"""PT19 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT19_MODULE")

pytestmark = [pytest.mark.owner("pt19"), pytest.mark.extension]


def ints(values: list[list[int]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def flags(values: list[list[int]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bool, device=test_device())


def valid_call() -> dict[str, object]:
    return {"q": seeded(2, 2, 3, 4, seed=1), "k": seeded(2, 2, 3, 4, seed=2),
            "v": seeded(2, 2, 3, 4, seed=3), "query_positions": ints([[0, 1, 2], [0, 0, 1]]),
            "key_positions": ints([[0, 1, 2], [0, 0, 1]]),
            "key_valid": flags([[1, 1, 1], [0, 1, 1]]), "window": 2}  # fmt: skip


@pytest.mark.clause("PT19.11")
def test_a_query_with_no_visible_key_gives_zeros():
    call = valid_call()
    call["key_valid"] = flags([[1, 1, 1], [0, 0, 0]])  # row 1: every key is padding
    got = drill.sliding_window_attention(**call)
    assert bool((got[1] == 0).all()) and not got.isnan().any(), f"{got[1]}"


@pytest.mark.clause("PT19.12")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("window", lambda: 2.0, WRONG_KIND),
        ("window", lambda: True, WRONG_KIND),
        ("q", lambda: seeded(2, 3, 3, 4, seed=1), BAD_VALUE),
        ("v", lambda: seeded(2, 2, 2, 4, seed=3), BAD_VALUE),
        ("query_positions", lambda: ints([[0, 1], [0, 0]]), BAD_VALUE),
        ("key_positions", lambda: torch.zeros(2, 3, device=test_device()), WRONG_KIND),
        ("key_valid", lambda: ints([[1, 1, 1], [0, 1, 1]]), WRONG_KIND),
        ("k", lambda: [[0.0]], WRONG_KIND),
    ],
    ids=["float window", "bool window", "Hq not a multiple of Hkv", "v of another Tk",
         "short query positions", "float key positions", "integer key_valid", "a list as k"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    names = {"q": ("q", "k"), "v": ("k", "v")}.get(argument, argument)
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.sliding_window_attention(**call), errors, names)
