"""Argument checks the config and layers share (wrong kind: TypeError; bad value: ValueError)."""

from __future__ import annotations

import math

from torch import Tensor


class ArgumentTypeError(TypeError, ValueError):
    """A wrong kind of object for an argument; the message names the argument.

    A TypeError, and a ValueError too, as the contracts' convention promises ValueError
    for every malformed argument (tinygpt's errors follow the same rule).
    """


_LARGEST_FLOAT32 = 3.4028234663852886e38
# In float32 a smaller epsilon rounds to zero (rsqrt(0) of a zero row is inf), and a
# rotary base below 1 makes frequencies so high that angles overflow to inf.
_SMALLEST_NORMAL_FLOAT32 = 1.1754943508222875e-38
_FLOAT_MINIMUMS = {"rms_norm_eps": _SMALLEST_NORMAL_FLOAT32, "rope_theta": 1.0}


def check_float(name: str, value: object) -> float:
    """A real number, finite in float32, above its minimum (``rope_theta``: 1; any other
    name, ``rms_norm_eps`` included: the smallest positive normal float32)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentTypeError(f"{name} must be a float, got {value!r}")
    minimum = _FLOAT_MINIMUMS.get(name, _SMALLEST_NORMAL_FLOAT32)
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


def check_features(name: str, value: object, width: int) -> Tensor:
    """A floating-point tensor of at least one dimension whose last dimension is ``width``."""
    if not isinstance(value, Tensor):
        raise ArgumentTypeError(f"{name} must be a Tensor, got {type(value).__name__}")
    if not value.is_floating_point():
        raise ArgumentTypeError(f"{name} must be a floating-point tensor, got {value.dtype}")
    if value.dim() == 0 or value.shape[-1] != width:
        raise ValueError(f"{name} must be [..., {width}], got {tuple(value.shape)}")
    return value


def check_bool(name: str, value: object) -> bool:
    """A bool (not 0/1 or a string)."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be a bool, got {value!r}")
    return value


__all__ = [
    "ArgumentTypeError",
    "check_bool",
    "check_features",
    "check_float",
    "check_probability",
    "check_size",
]
