"""Checkpoint state dicts: str names to floating-point weights, layers numbered 0..n-1."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from torch import Tensor

from .errors import ArgumentTypeError, type_name


def check_weights(name: str, state_dict: object) -> Mapping[str, Tensor]:
    """A mapping of str names to floating-point tensors; an error names the bad key."""
    if not isinstance(state_dict, Mapping):
        raise ArgumentTypeError(
            f"{name} must be a mapping of names to tensors, got {type_name(state_dict)}"
        )
    for key, value in state_dict.items():
        if not isinstance(key, str):
            raise ArgumentTypeError(f"{name} keys must be str, got {type_name(key)} {key!r}")
        if not isinstance(value, Tensor):
            raise ArgumentTypeError(f"{name}[{key!r}] must be a Tensor, got {type_name(value)}")
        if not value.is_floating_point():
            raise ValueError(f"{name}[{key!r}] must be a floating-point weight, got {value.dtype}")
    return state_dict


def numbered_count(
    names: Iterable[str],
    pattern: re.Pattern[str],
    *,
    what: str,
    unit: str,
    shown: Callable[[str], str] = str,
) -> int:
    """How many numbered layers the names cover (``pattern``'s group 1 is the index).

    The indices must run 0..n-1 with no gap. Only the names present are read, so an
    absurd index (``blocks.999999999.x``) is an error naming its key (``shown`` maps it
    for the message), never a reason to enumerate a billion expected names.
    """
    first_name: dict[int, str] = {}
    for name in names:
        if match := pattern.match(name):
            first_name.setdefault(int(match.group(1)), name)
    if not first_name:
        raise ValueError(f"{what} has no {unit}s")
    count = len(first_name)
    for index in sorted(first_name):
        if index >= count:
            raise ValueError(
                f"{what} {shown(first_name[index])!r}: {unit} {index} of only {count} "
                f"{unit}s (indices must run 0..{count - 1})"
            )
    return count
