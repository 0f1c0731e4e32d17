"""P21 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate, test_device
from gptlab_testkit.boundary import BAD_VALUE, WRONG_KIND
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P21_MODULE")

pytestmark = [pytest.mark.owner("p21"), pytest.mark.extension]


def long(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def rejected(
    call: dict[str, torch.Tensor],
    argument: str | tuple[str, ...],
    errors: type[BaseException] | tuple[type[BaseException], ...] = BAD_VALUE,
    values: tuple[object, ...] = (),
) -> None:
    real = {name: t for name, t in call.items() if t.device.type != "meta"}
    with inputs_untouched(**real):
        assert_rejects(lambda: drill.paged_lookup(*call.values()), errors, argument, values=values)


def valid_call() -> dict[str, torch.Tensor]:
    return {
        "cache": seeded(4, 2, 1, 3, seed=8),
        "block_table": long([[0, 1], [3, 2]]),
        "positions": long([[0, 3], [1, 2]]),
    }


@pytest.mark.clause("P21.7")
@pytest.mark.parametrize("bad", [4, -1], ids=["past the table's reach", "negative"])
def test_a_position_outside_the_rows_table_is_rejected(bad):
    rejected({**valid_call(), "positions": long([[0, 3], [1, bad]])}, "positions", values=(bad,))


@pytest.mark.clause("P21.8")
def test_positions_for_another_batch_size_are_rejected():
    rejected({**valid_call(), "positions": long([[0, 3]])}, ("positions", "block_table"))


@pytest.mark.clause("P21.9")
def test_a_floating_point_block_table_is_rejected():
    table = torch.tensor([[0.0, 1.0], [3.0, 2.0]], device=test_device())
    rejected({**valid_call(), "block_table": table}, "block_table", WRONG_KIND)


@pytest.mark.clause("P21.9")
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("positions", torch.tensor([[True, False], [False, True]])),
        ("positions", torch.tensor([0, 3])),
        ("cache", torch.zeros(8, 1, 3)),
    ],
    ids=["bool positions", "1-D positions", "3-D cache"],
)
def test_the_wrong_kind_rank_or_dtype_of_tensor_is_rejected(name, value):
    rejected({**valid_call(), name: value.to(test_device())}, name, WRONG_KIND)


@pytest.mark.clause("P21.9")
@pytest.mark.parametrize("name", ["cache", "block_table", "positions"])
def test_a_meta_tensor_is_rejected(name):
    call = valid_call()
    after = list(call)[list(call).index(name) :]  # `name` and every argument after it
    call = {key: value.to("meta") if key in after else value for key, value in call.items()}
    rejected(call, name, WRONG_KIND)


@pytest.mark.clause("P21.13")
@pytest.mark.parametrize("entry", [-1, 4], ids=["unallocated -1", "past the pool"])
def test_a_position_read_through_an_invalid_table_entry_is_rejected(entry):
    table = long([[0, 1], [3, entry]])  # row 1's position 2 reads its second block
    rejected({**valid_call(), "block_table": table}, ("block_table", "positions"))
