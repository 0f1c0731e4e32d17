"""arg_checks: the argument checks the gptlab packages share, each written once.

One error policy: an argument of the wrong kind raises `ArgumentTypeError` (a
TypeError that is also a ValueError), a bad value a ValueError; every message names
the argument.
"""

from .errors import ArgumentTypeError, type_name
from .state_dicts import check_weights, numbered_count
from .tensors import check_device, check_tensor, device_memory
from .values import check_instance, check_int, check_str

__all__ = [
    "ArgumentTypeError",
    "check_device",
    "check_instance",
    "check_int",
    "check_str",
    "check_tensor",
    "check_weights",
    "device_memory",
    "numbered_count",
    "type_name",
]
