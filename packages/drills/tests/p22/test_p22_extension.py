"""P22 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import assert_rejects, candidate, test_device
from gptlab_testkit.boundary import BAD_VALUE, WRONG_KIND
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P22_MODULE")

pytestmark = [pytest.mark.owner("p22"), pytest.mark.extension]


def batch(B: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Three fields a serving loop keeps per row: tokens, lengths and a K/V block."""
    device = test_device()
    return {
        "tokens": torch.arange(B * 3, device=device).reshape(B, 3) + 100,
        "lengths": torch.arange(B, device=device) + 1,
        "kv": seeded(B, 2, 4, 3, seed=seed),
    }


def mask(bits: list[int]) -> torch.Tensor:
    return torch.tensor(bits, dtype=torch.bool, device=test_device())


@pytest.mark.clause("P22.6")
def test_a_mask_that_is_not_bool_is_rejected():
    fields, live = batch(3), torch.tensor([1, 0, 1], device=test_device())
    with inputs_untouched(live=live, **fields):
        assert_rejects(lambda: drill.compact_live_rows(fields, live), WRONG_KIND, "live")


@pytest.mark.clause("P22.6")
def test_a_mask_of_another_batch_size_is_rejected():
    fields, live = batch(3), mask([1, 0, 1, 1])
    with inputs_untouched(live=live, **fields):
        assert_rejects(lambda: drill.compact_live_rows(fields, live), BAD_VALUE, "live")


@pytest.mark.clause("P22.7")
def test_a_field_of_another_batch_size_is_rejected():
    fields = {**batch(3), "lengths": torch.arange(4, device=test_device())}
    live = mask([1, 0, 1])
    with inputs_untouched(live=live, **fields):
        assert_rejects(
            lambda: drill.compact_live_rows(fields, live), ValueError, ("lengths", "fields")
        )


@pytest.mark.clause("P22.6")
@pytest.mark.parametrize("kind", ["2-D", "list", "meta"])
def test_a_mask_of_another_rank_or_kind_is_rejected(kind):
    fields = batch(3)
    live = {
        "2-D": mask([1, 0, 1])[:, None],
        "list": [True, False, True],
        "meta": torch.zeros(3, dtype=torch.bool, device="meta"),
    }[kind]
    with inputs_untouched(**fields):
        assert_rejects(lambda: drill.compact_live_rows(fields, live), WRONG_KIND, "live")


@pytest.mark.clause("P22.7")
@pytest.mark.parametrize("kind", ["a list field", "a 0-D field", "a list of fields"])
def test_a_field_that_is_not_a_batch_tensor_or_fields_that_are_no_mapping_are_rejected(kind):
    live = mask([1, 0, 1])
    fields: object
    if kind == "a list field":
        fields = {**batch(3), "lengths": [1, 2, 3]}
    elif kind == "a 0-D field":
        fields = {**batch(3), "lengths": torch.tensor(3, device=test_device())}
    else:
        fields = list(batch(3).values())
    with inputs_untouched(live=live):
        assert_rejects(
            lambda: drill.compact_live_rows(fields, live), WRONG_KIND, ("lengths", "fields")
        )


@pytest.mark.clause("P22.6")
def test_a_meta_mask_beside_meta_fields_is_rejected():
    fields = {name: field.to("meta") for name, field in batch(3).items()}
    live = torch.zeros(3, dtype=torch.bool, device="meta")
    assert_rejects(lambda: drill.compact_live_rows(fields, live), WRONG_KIND, "live")
