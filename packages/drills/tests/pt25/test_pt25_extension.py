"""PT25 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched

drill = candidate("DRILL_PT25_MODULE")

pytestmark = [pytest.mark.owner("pt25"), pytest.mark.extension]


def ints(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def valid_call() -> dict[str, object]:
    return {"draft": ints([[1, 2], [3, 4]]), "accepted": ints([1, 2]), "bonus": ints([5, 6]),
            "positions": ints([3, 0])}  # fmt: skip


@pytest.mark.clause("PT25.9")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("accepted", lambda: ints([1]), BAD_VALUE),
        ("bonus", lambda: ints([[5], [6]]), BAD_VALUE),
        ("positions", lambda: ints([3, 0, 1]), BAD_VALUE),
        ("draft", lambda: ints([1, 2]), BAD_VALUE),
        ("positions", lambda: ints([-1, 0]), BAD_VALUE),
        ("draft", lambda: torch.zeros(2, 2, device=test_device()), WRONG_KIND),
        ("accepted", lambda: torch.tensor([True, False], device=test_device()), WRONG_KIND),
        ("bonus", lambda: [5, 6], WRONG_KIND),
        ("bonus", lambda: torch.zeros(2, dtype=torch.long, device="meta"), BAD_VALUE),
    ],
    ids=["short accepted", "2-D bonus", "long positions", "1-D draft", "negative position",
         "float draft", "bool accepted", "a list", "bonus on another device"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {**valid_call(), argument: bad()}
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor) and not t.is_meta}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.commit_speculation(**call), errors, argument)


@pytest.mark.clause("PT25.10")
def test_the_inputs_are_only_read_and_the_results_are_new_memory():
    call = valid_call()
    with inputs_untouched(**call):  # type: ignore[arg-type]
        tokens, row_ids, new_positions, mask = drill.commit_speculation(**call)
        with torch.inference_mode():
            for tensor in (tokens, row_ids, new_positions):
                tensor.fill_(-7)
            mask.fill_(False)
    assert drill.commit_speculation(**call)[0].tolist() == [1, 5, 3, 4, 6]
