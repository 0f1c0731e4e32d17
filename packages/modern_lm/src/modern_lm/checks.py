"""Argument checks the config and layers share (wrong kind: TypeError; bad value: ValueError)."""

from __future__ import annotations

import math


class ArgumentTypeError(TypeError, ValueError):
    """A wrong kind of object for an argument; the message names the argument.

    A TypeError, and a ValueError too, as the contracts' convention promises ValueError
    for every malformed argument (tinygpt's errors follow the same rule).
    """


_LARGEST_FLOAT32 = 3.4028234663852886e38
# In float32 a smaller epsilon rounds to zero (rsqrt(0) of a zero row is inf), and a
# rotary base below 1 makes frequencies so high that angles overflow to inf.
_FLOAT_MINIMUMS = {"rms_norm_eps": 1.1754943508222875e-38, "rope_theta": 1.0}


def check_float(name: str, value: object) -> float:
    """``rms_norm_eps`` or ``rope_theta``: a real number, finite in float32, above its minimum."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentTypeError(f"{name} must be a float, got {value!r}")
    minimum = _FLOAT_MINIMUMS[name]
    if (isinstance(value, float) and math.isnan(value)) or not minimum <= value <= _LARGEST_FLOAT32:
        raise ValueError(f"{name} must lie in [{minimum:.3g}, 3.4e38], got {value}")
    return float(value)


def check_size(name: str, value: object) -> int:
    """A positive int (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{name} must be an int, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return value


def check_probability(name: str, value: object) -> float:
    """A dropout probability: a real number in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentTypeError(f"{name} must be a float, got {value!r}")
    if not 0.0 <= value < 1.0:  # NaN fails both comparisons
        raise ValueError(f"{name} must lie in [0, 1), got {value}")
    return float(value)


__all__ = ["ArgumentTypeError", "check_float", "check_probability", "check_size"]
