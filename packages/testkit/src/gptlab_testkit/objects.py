"""Same object? Same memory? What a test asks of the things a candidate hands back.

A judged candidate runs in a process of its own, and a tensor it returns reaches the test
as a copy made in the test's process: `is`, `data_ptr()` and storage comparisons of that
copy say nothing about the candidate's own objects. The helpers here answer about the
candidate's objects wherever they live (in-process they are plain `is`, `data_ptr()` and
storage comparisons). An answer only the candidate's process could give is its word, not
a value the test checked: the test that rests on it is shown, never scored, and each
assertion below ends its message with "(worker-reported)" when that is so.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from torch import Tensor

from gptlab_testkit.judge import worker_facts as _facts

REPORTED = _facts.WORKER_REPORTED


def object_id(value: Any) -> Hashable:
    """Equal for the same object: a tensor, or a list or dict a call returned."""
    return _facts.identity(value)


def memory_address(tensor: Tensor) -> Hashable:
    """Where the tensor's first element lives."""
    return _facts.data_ptr(tensor)


def storage_id(tensor: Tensor) -> Hashable:
    """Which memory the tensor is a view of: equal for views of the same storage."""
    return _facts.storage(tensor)


def reported_address(address: Any) -> Any:
    """A data pointer the candidate reported as a number, as an address of the test's own
    tensor (the candidate's copy of an argument maps onto the test's); anything else as
    it is."""
    return _facts.judge_address(address)


def values_now(tensor: Tensor) -> Tensor:
    """The values of a view of a returned tensor as they are now in the candidate's memory
    (a copy taken earlier would be stale)."""
    return _facts.current(tensor)


def is_instance(value: Any, cls: type) -> bool:
    """isinstance(value, cls), asked where the object lives."""
    return _facts.is_instance(value, cls)


def reported(*values: Any) -> str:
    """ " (worker-reported)" when what a test knows of these values is the candidate's
    process's word, else "": for a message a named assertion here does not cover."""
    return _facts.worker_reported(*values)


def _fail(message: str, *values: Any) -> str:
    return message + reported(*values)


def assert_same_object(first: Any, second: Any, what: str = "objects") -> None:
    """`first is second`, for the candidate's objects."""
    assert object_id(first) == object_id(second), _fail(f"{what} are two objects", first, second)


def assert_other_object(first: Any, second: Any, what: str = "objects") -> None:
    """`first is not second`, for the candidate's objects."""
    assert object_id(first) != object_id(second), _fail(f"{what} are one object", first, second)


def assert_same_objects(now: Any, before: Any, what: str) -> None:
    """The tensors of `now` are the very objects of `before`, in order (say, storage that
    must never be rebound)."""
    assert _facts.same_objects(now, before), _fail(what, now)


def assert_same_memory(first: Tensor, second: Tensor, what: str) -> None:
    """The two tensors start at the same address."""
    assert memory_address(first) == memory_address(second), _fail(what, first, second)


def assert_other_memory(first: Tensor, second: Tensor, what: str) -> None:
    """The two tensors start at different addresses (say, a copy and its original)."""
    assert memory_address(first) != memory_address(second), _fail(what, first, second)


def assert_shares_storage(first: Tensor, second: Tensor, what: str) -> None:
    """`first` is a view of `second`'s memory (or the other way round)."""
    assert storage_id(first) == storage_id(second), _fail(what, first, second)


def assert_own_storage(first: Tensor, second: Tensor, what: str) -> None:
    """`first` and `second` are views of different memory."""
    assert storage_id(first) != storage_id(second), _fail(what, first, second)


def assert_instance(value: Any, cls: type, what: str = "") -> None:
    """isinstance(value, cls), asked where the object lives."""
    name = what or type(value).__name__
    assert is_instance(value, cls), _fail(f"{name} is not a {cls.__name__}", value)


def assert_values_now(view: Tensor, want: Tensor, what: str) -> None:
    """The view's values, read now from the candidate's memory, equal `want` exactly."""
    assert values_now(view).equal(want), _fail(what, view)


__all__ = [
    "REPORTED",
    "assert_instance",
    "assert_other_memory",
    "assert_other_object",
    "assert_own_storage",
    "assert_same_memory",
    "assert_same_object",
    "assert_same_objects",
    "assert_shares_storage",
    "assert_values_now",
    "is_instance",
    "memory_address",
    "object_id",
    "reported",
    "reported_address",
    "storage_id",
    "values_now",
]
