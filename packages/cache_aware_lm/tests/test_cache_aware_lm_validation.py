"""Each malformed input is a ValueError, raised at the boundary."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from gptlab_testkit import assert_close, test_device
from gptlab_testkit.boundary import other_devices
from gptlab_testkit.models import cache_aware_modules

MODULES = cache_aware_modules()
# The candidates these contract tests grade: M03 and its advanced branch (over M02).
GRADED_FOR = ("CACHE_AWARE_LM_MODULE", "CACHE_AWARE_MODERN_MODULE")
pytestmark = [
    pytest.mark.owner("cache_metadata"),
    pytest.mark.parametrize("lm", list(MODULES.values()), ids=list(MODULES)),
]

Call = dict[str, Any]


def _other_device() -> torch.device:
    """A real second device: a `meta` tensor is no faithful stand-in (docs/contracts.md): a
    value check on it raises RuntimeError first. The meta cases are extension tests."""
    others = other_devices(test_device())
    if not others:
        pytest.skip("no second real device on this machine")
    return others[0]


def _column_scale() -> torch.Tensor:
    """[1, 2]: keeps the first position, doubles the second (a jump inside the row)."""
    return torch.tensor([1, 2], device=test_device())


def _valid_call(model) -> Call:
    """Rows at origins [0, 4] with 3 cached tokens each, in storage padded to 6 slots.

    The valid next call feeds 2 tokens at positions [3, 4] and [7, 8].
    """
    device = test_device()
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    positions = torch.tensor([[0, 1, 2], [4, 5, 6]], device=device)
    out = model(ids, positions, use_cache=True)
    past = tuple(
        tuple(torch.cat([t, torch.zeros_like(t)], dim=2) for t in pair)
        for pair in out.past_key_values
    )
    return {
        "input_ids": torch.tensor([[7, 8], [9, 10]], device=device),
        "positions": torch.tensor([[3, 4], [7, 8]], device=device),
        "past_key_values": past,
        "cache_lengths": out.cache_lengths.clone(),
        "cache_start_positions": out.cache_start_positions.clone(),
    }


def _second_row(delta: int) -> torch.Tensor:
    """[[0], [delta]]: moves row 1's positions only."""
    return torch.tensor([[0], [delta]], device=test_device())


def _full_call(model) -> Call:
    """Both rows from origin 0 with 3 cached tokens and storage of exactly 3 slots.

    Here a cache's own length and a zero origin happen to be right, so an implementation
    that fills in missing metadata from the storage would compute the right answer; the
    contract still rejects a cache without its metadata (and metadata without a cache).
    """
    device = test_device()
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    positions = torch.tensor([[0, 1, 2], [0, 1, 2]], device=device)
    out = model(ids, positions, use_cache=True)
    return {
        "input_ids": torch.tensor([[7, 8], [9, 10]], device=device),
        "positions": torch.tensor([[3, 4], [3, 4]], device=device),
        "past_key_values": out.past_key_values,
        "cache_lengths": out.cache_lengths.clone(),
        "cache_start_positions": out.cache_start_positions.clone(),
    }


# Both sides of the two-sided rule "metadata without a cache, or a cache without
# metadata, is a ValueError", each where guessing the missing half would be right;
# and the position rule broken on the second row only.
METADATA_WITHOUT_ITS_CACHE: dict[str, Callable[[Call], Call]] = {
    "full_cache_without_lengths": lambda c: {**c, "cache_lengths": None},
    "full_cache_without_starts": lambda c: {**c, "cache_start_positions": None},
    "full_cache_without_metadata": lambda c: {
        **c,
        "cache_lengths": None,
        "cache_start_positions": None,
    },
    "zero_lengths_without_cache": lambda c: {
        **c,
        "past_key_values": None,
        "cache_lengths": torch.zeros_like(c["cache_lengths"]),
        "cache_start_positions": c["positions"][:, 0].clone(),
    },
    # The per-row position rule on the second row, where the cache is exactly full.
    "full_cache_gap_second_row": lambda c: {**c, "positions": c["positions"] + _second_row(1)},
    "full_cache_overlap_second_row": lambda c: {
        **c,
        "positions": c["positions"] - _second_row(1),
    },
    "starts_only_without_cache": lambda c: {
        **c,
        "past_key_values": None,
        "cache_lengths": None,
        "cache_start_positions": c["positions"][:, 0].clone(),
    },
}


def _set(**changes: Callable[[Call], Any]) -> Callable[[Call], Call]:
    def edit(call: Call) -> Call:
        return {**call, **{name: make(call) for name, make in changes.items()}}

    return edit


def _per_layer(edit: Callable[[torch.Tensor], torch.Tensor], which: str = "both"):
    def past(call: Call):
        return tuple(
            (
                edit(key) if which in ("both", "key") else key,
                edit(value) if which in ("both", "value") else value,
            )
            for key, value in call["past_key_values"]
        )

    return past


def _shift_metadata(row: int, length_delta: int) -> Callable[[Call], Call]:
    """Change row's length by delta and its start by -delta: positions stay consistent."""

    def edit(call: Call) -> Call:
        lengths = call["cache_lengths"].clone()
        starts = call["cache_start_positions"].clone()
        lengths[row] += length_delta
        starts[row] -= length_delta
        return {**call, "cache_lengths": lengths, "cache_start_positions": starts}

    return edit


MALFORMED: dict[str, Callable[[Call], Call]] = {
    "lengths_without_cache": _set(
        past_key_values=lambda c: None, cache_start_positions=lambda c: None
    ),
    "starts_without_cache": _set(past_key_values=lambda c: None, cache_lengths=lambda c: None),
    "metadata_without_cache": _set(past_key_values=lambda c: None),
    "cache_without_lengths": _set(cache_lengths=lambda c: None),
    "cache_without_starts": _set(cache_start_positions=lambda c: None),
    "cache_without_metadata": _set(
        cache_lengths=lambda c: None, cache_start_positions=lambda c: None
    ),
    "lengths_int32": _set(cache_lengths=lambda c: c["cache_lengths"].to(torch.int32)),
    "starts_float": _set(cache_start_positions=lambda c: c["cache_start_positions"].float()),
    "lengths_shape_b1": _set(cache_lengths=lambda c: c["cache_lengths"][:, None]),
    "starts_wrong_batch": _set(
        cache_start_positions=lambda c: torch.cat([c["cache_start_positions"]] * 2)
    ),
    "negative_length": _shift_metadata(row=0, length_delta=-4),
    "negative_start": _shift_metadata(row=0, length_delta=1),
    "lengths_other_device": _set(cache_lengths=lambda c: c["cache_lengths"].to(_other_device())),
    "starts_other_device": _set(
        cache_start_positions=lambda c: c["cache_start_positions"].to(_other_device())
    ),
    "length_beyond_storage": _shift_metadata(row=1, length_delta=4),
    "position_gap": _set(positions=lambda c: c["positions"] + 1),
    # A per-row rule, broken on the second row only (a check of row 0 alone misses it).
    "position_gap_second_row": _set(positions=lambda c: c["positions"] + _second_row(1)),
    "position_overlap_second_row": _set(positions=lambda c: c["positions"] - _second_row(1)),
    "position_overlap": _set(positions=lambda c: c["positions"] - 1),
    "non_contiguous_positions": _set(positions=lambda c: c["positions"] * _column_scale()),
    "one_layer_missing": _set(past_key_values=lambda c: c["past_key_values"][:-1]),
    "one_layer_extra": _set(
        past_key_values=lambda c: (*c["past_key_values"], c["past_key_values"][0])
    ),
    "layer_not_a_pair": _set(
        past_key_values=lambda c: tuple((k,) for k, _ in c["past_key_values"])
    ),
    "cache_wrong_batch": _set(past_key_values=_per_layer(lambda t: t[:1])),
    "cache_wrong_heads": _set(past_key_values=_per_layer(lambda t: torch.cat([t, t], dim=1))),
    "cache_wrong_head_dim": _set(past_key_values=_per_layer(lambda t: t[..., :-1])),
    "cache_three_dims": _set(past_key_values=_per_layer(lambda t: t[0])),
    "key_value_storage_mismatch": _set(past_key_values=_per_layer(lambda t: t[:, :, :-1], "value")),
    "cache_float64": _set(past_key_values=_per_layer(lambda t: t.double())),
    "cache_other_device": _set(past_key_values=_per_layer(lambda t: t.to(_other_device()))),
}

# Stricter than the contract (this project's own boundary), graded as extension tests.
STRICT_EXTRAS: dict[str, Callable[[Call], Call]] = {
    "lengths_as_list": _set(cache_lengths=lambda c: c["cache_lengths"].tolist()),
    "positions_shape_mismatch": _set(positions=lambda c: c["positions"][:, :1]),
    "positions_float": _set(positions=lambda c: c["positions"].float()),
    "input_ids_out_of_vocab": _set(input_ids=lambda c: c["input_ids"] + 1_000_000),
    # The references check devices before values, so even `meta` reaches the device check.
    "lengths_on_meta": _set(cache_lengths=lambda c: c["cache_lengths"].to("meta")),
    "starts_on_meta": _set(cache_start_positions=lambda c: c["cache_start_positions"].to("meta")),
    "cache_on_meta": _set(past_key_values=_per_layer(lambda t: t.to("meta"))),
}


@pytest.mark.contract
def test_valid_call_is_accepted(lm):
    """The baseline every malformed case edits must itself be accepted."""
    model = lm.make_test_model().to(test_device())
    out = model(**_valid_call(model), use_cache=True)
    assert out.cache_lengths.tolist() == [5, 5]


@pytest.mark.rejection
@pytest.mark.contract
@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_input_is_value_error(lm, case):
    model = lm.make_test_model().to(test_device())
    call = MALFORMED[case](_valid_call(model))
    with pytest.raises(ValueError):
        model(**call, use_cache=True)


@pytest.mark.contract
def test_full_cache_call_is_accepted(lm):
    """The baseline of the two-sided metadata cases: with all of it, the call is exact."""
    model = lm.make_test_model().to(test_device())
    call = _full_call(model)
    out = model(**call, use_cache=True)
    assert out.cache_lengths.tolist() == [5, 5]
    whole = model(
        torch.tensor([[1, 2, 3, 7, 8], [4, 5, 6, 9, 10]], device=test_device()),
        torch.arange(5, device=test_device()).repeat(2, 1),
    )
    assert_close(out.logits, whole.logits[:, 3:], "cached call against the whole sequence")


@pytest.mark.rejection
@pytest.mark.contract
@pytest.mark.parametrize("case", list(METADATA_WITHOUT_ITS_CACHE))
def test_full_cache_cases_are_value_errors(lm, case):
    model = lm.make_test_model().to(test_device())
    call = METADATA_WITHOUT_ITS_CACHE[case](_full_call(model))
    with pytest.raises(ValueError):
        model(**call, use_cache=True)


@pytest.mark.extension
@pytest.mark.parametrize("case", list(STRICT_EXTRAS))
def test_strict_boundary_rejects_loose_input(lm, case):
    model = lm.make_test_model().to(test_device())
    call = STRICT_EXTRAS[case](_valid_call(model))
    with pytest.raises(ValueError):
        model(**call, use_cache=True)


@pytest.mark.extension  # the page lists positions in [0, context) but no ValueError outside
@pytest.mark.parametrize("origin", [-1, 1_000_000])
def test_position_outside_context_is_value_error(lm, origin):
    model = lm.make_test_model().to(test_device())
    ids = torch.tensor([[1, 2]], device=test_device())
    positions = origin + torch.arange(2, device=test_device())[None]
    with pytest.raises(ValueError):
        model(ids, positions)
