"""Tensor assertions every suite shares: fp32 parity, cache parity, ownership."""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
from torch import Tensor

LayerKV = tuple[Tensor, Tensor]
PastKeyValues = tuple[LayerKV, ...]

# fp32 parity with full recomputation: different reduction orders, same math.
ATOL = 1e-5
RTOL = 1e-4


def test_device() -> torch.device:
    """Where tests build their own tensors and models (GPTLAB_DEVICE, default cpu)."""
    return torch.device(os.environ.get("GPTLAB_DEVICE", "cpu"))


test_device.__test__ = False  # type: ignore[attr-defined]


def assert_close(
    actual: Tensor, expected: Tensor, what: str = "tensor", **tolerance: float
) -> None:
    """fp32 parity (ATOL/RTOL unless overridden), with a message naming what differs."""
    torch.testing.assert_close(
        actual,
        expected,
        atol=tolerance.get("atol", ATOL),
        rtol=tolerance.get("rtol", RTOL),
        msg=lambda detail: f"{what}: {detail}",
    )


def assert_past_close(
    actual: Sequence[LayerKV] | None,
    expected: Sequence[LayerKV] | None,
    what: str = "past_key_values",
    **tolerance: float,
) -> None:
    """Every layer's key and value match in shape and value."""
    assert actual is not None, f"{what}: got None"
    assert expected is not None, f"{what}: reference is None"
    assert len(actual) == len(expected), f"{what}: {len(actual)} layers, expected {len(expected)}"
    for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
        assert len(got) == 2, f"{what}[{index}] is not a (key, value) pair"
        for name, got_tensor, want_tensor in (("key", got[0], want[0]), ("value", got[1], want[1])):
            assert_close(got_tensor, want_tensor, f"{what}[{index}].{name}", **tolerance)


def clone_past(past: Sequence[LayerKV]) -> PastKeyValues:
    return tuple((key.clone(), value.clone()) for key, value in past)


def assert_past_unchanged(before: Sequence[LayerKV], after: Sequence[LayerKV], what: str) -> None:
    """Bitwise: a cache the caller owns was not written."""
    for index, ((key0, value0), (key1, value1)) in enumerate(zip(before, after, strict=True)):
        assert torch.equal(key0, key1), f"{what}: layer {index} key was written in place"
        assert torch.equal(value0, value1), f"{what}: layer {index} value was written in place"


def shares_storage(first: Tensor, second: Tensor) -> bool:
    """True when two tensors are views of the same memory (in judge mode, the worker's
    memory as it reported it: `worker_facts`)."""
    from gptlab_testkit.judge.worker_facts import storage

    return storage(first) == storage(second)


def assert_no_shared_storage(
    returned: Sequence[LayerKV], owned: Sequence[LayerKV], what: str
) -> None:
    from gptlab_testkit.judge.worker_facts import worker_reported

    for index, (pair_returned, pair_owned) in enumerate(zip(returned, owned, strict=True)):
        for tensor_returned in pair_returned:
            for tensor_owned in pair_owned:
                assert not shares_storage(tensor_returned, tensor_owned), (
                    f"{what}: layer {index} aliases the caller's tensor"
                    + worker_reported(tensor_returned, tensor_owned)
                )
