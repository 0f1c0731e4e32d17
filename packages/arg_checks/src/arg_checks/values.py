"""Plain Python arguments: ints in a range, strings, instances of one class."""

from __future__ import annotations

from typing import TypeVar

from .errors import ArgumentTypeError, type_name

T = TypeVar("T")


def check_int(name: str, value: object, *, minimum: int, maximum: int | None = None) -> int:
    """An int (never a bool) in ``[minimum, maximum]`` (no upper bound when None)."""
    # bool is an int subclass; True layers is a bug, not a one.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{name} must be an int, got {type_name(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
    return value


def check_str(name: str, value: object, *, allow_empty: bool) -> str:
    """A str (a namespace's ids: hashed and digested, so a list would fail far later)."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a str, got {type_name(value)} {value!r}")
    if not allow_empty and not value:
        raise ValueError(f"{name} must be a non-empty str")
    return value


def check_instance(name: str, value: object, kind: type[T]) -> T:
    """An instance of ``kind`` (a namespace, a config): anything else is the wrong kind."""
    if not isinstance(value, kind):
        raise ArgumentTypeError(f"{name} must be a {kind.__name__}, got {type_name(value)}")
    return value
