"""The guard regions travel: a guarded buffer crosses the wire with its whole allocation, both
ways, and what a kernel wrote into a guard comes back into the judge's allocation."""

from __future__ import annotations

import pytest
import torch
from gptlab_worker import wire

from gptlab_kernels.guards import (
    CANARY,
    WHOLE_ALLOCATION,
    assert_no_store_outside,
    guarded,
    guarded_output,
)

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]


def round_trip(tensor: torch.Tensor) -> torch.Tensor:
    blobs: list[bytes] = []
    data = wire.encode([tensor], blobs)
    return wire.decode(data, blobs)[0]


def test_the_guards_mark_is_the_one_the_wire_reads():
    assert WHOLE_ALLOCATION == wire.WHOLE_ALLOCATION


def test_a_guarded_view_arrives_inside_its_whole_allocation():
    x = guarded("x", torch.arange(10.0), (2,))

    there = round_trip(x.view)

    assert torch.equal(there, x.view) and there.stride() == (2,)
    assert there.untyped_storage().nbytes() == x.allocation.untyped_storage().nbytes()
    assert wire.travels_whole(there), "the worker's copy must travel back whole too"


def test_a_store_into_a_guard_there_comes_back_and_is_named_with_its_side():
    out = guarded_output("out", (5,), torch.float32, torch.device("cpu"))
    there = round_trip(out.view)
    there.as_strided((1,), (1,), there.storage_offset() + 5).fill_(1.0)  # one past the end

    back = round_trip(there)
    assert wire.copy_allocation(out.view, back)

    with pytest.raises(AssertionError, match=r"out: .* after the buffer"):
        assert_no_store_outside(out)
    assert float(out.view[0]) == CANARY


def test_an_unmarked_view_travels_as_before():
    base = torch.arange(10.0)

    there = round_trip(base[2:4])

    assert there.untyped_storage().nbytes() < base.untyped_storage().nbytes()
