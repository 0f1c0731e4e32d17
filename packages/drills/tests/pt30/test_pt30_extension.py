"""PT30 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched

drill = candidate("DRILL_PT30_MODULE")

pytestmark = [pytest.mark.owner("pt30"), pytest.mark.extension]


def ints(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def flags(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bool, device=test_device())


def make_state() -> dict[str, torch.Tensor]:
    return {"tokens": ints([[1, 2, 0], [3, 0, 0]]), "lengths": ints([2, 1]),
            "done": flags([False, True]), "last_tokens": ints([2, 3])}  # fmt: skip


@pytest.mark.clause("PT30.9")
def test_the_state_is_updated_in_place_never_replaced():
    state = make_state()
    fields = {name: (state[name], state[name].data_ptr()) for name in state}
    drill.apply_decode_step_(state, ints([0]), ints([7]), flags([True]))
    for name, (tensor, pointer) in fields.items():
        assert state[name] is tensor and state[name].data_ptr() == pointer, f"{name} replaced"
    assert state["tokens"][0, 2].item() == 7 and state["lengths"].tolist() == [3, 1]


@pytest.mark.clause("PT30.10")
def test_a_done_row_stays_done_and_the_step_returns_nothing():
    state = make_state()
    result = drill.apply_decode_step_(state, ints([1, 0]), ints([8, 9]), flags([False, False]))
    assert result is None, f"returned {type(result).__name__}"
    assert state["done"].tolist() == [False, True]


@pytest.mark.clause("PT30.11")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("scheduled_rows", lambda: ints([2]), BAD_VALUE),
        ("scheduled_rows", lambda: ints([-1]), BAD_VALUE),
        ("scheduled_rows", lambda: torch.tensor([0.0], device=test_device()), WRONG_KIND),
        ("sampled_tokens", lambda: torch.tensor([1.0], device=test_device()), WRONG_KIND),
        ("finished", lambda: ints([0]), WRONG_KIND),
        ("finished", lambda: [False], WRONG_KIND),
    ],
    ids=["row past R", "negative row", "float rows", "float tokens", "integer flags", "a list"],
)  # fmt: skip
def test_the_reference_rejects_step_inputs_the_contract_leaves_undefined(argument, bad, errors):
    state = make_state()
    call = {"state": state, "scheduled_rows": ints([0]), "sampled_tokens": ints([4]),
            "finished": flags([False]), argument: bad()}  # fmt: skip
    with inputs_untouched(**state):
        assert_rejects(lambda: drill.apply_decode_step_(**call), errors, argument)


@pytest.mark.clause("PT30.11")
@pytest.mark.parametrize(
    "broken",
    [{"lengths": ints([2])}, {"done": ints([0, 1])}, {"tokens": ints([1, 2])},
     {"last_tokens": None}],
    ids=["short lengths", "integer done", "1-D tokens", "a field missing"],
)  # fmt: skip
def test_the_reference_rejects_an_inconsistent_state(broken):
    state = {**make_state(), **broken}
    state = {name: field for name, field in state.items() if field is not None}
    kept = dict(state)
    with inputs_untouched(**kept):
        assert_rejects(
            lambda: drill.apply_decode_step_(state, ints([0]), ints([4]), flags([False])),
            BAD_VALUE,
            "state",
        )
