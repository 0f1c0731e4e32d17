"""Sizes checked before memory is asked for: the pool's bytes against the device's memory.

A pool is ``2 * layer_count`` tensors of ``num_blocks * block_size * head_count *
head_dim`` elements. Sizes that cannot be allocated are refused with the bytes they
would take (a ValueError naming the sizes), instead of hanging in a loop over
``2**40`` layers or surfacing the allocator's own failure.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from arg_checks import device_memory


def pool_bytes(sizes: Mapping[str, int], dtype: torch.dtype) -> int:
    """Bytes of every layer's key and value tensors (Python ints: no overflow)."""
    per_token = sizes["head_count"] * sizes["head_dim"] * torch.empty(0, dtype=dtype).element_size()
    tokens = sizes["num_blocks"] * sizes["block_size"]
    return 2 * sizes["layer_count"] * tokens * per_token


def describe(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{name}={value}" for name, value in sizes.items())


def check_pool_fits(sizes: Mapping[str, int], dtype: torch.dtype, device: torch.device) -> int:
    """The pool's bytes, if they fit the device's memory (ValueError naming both if not)."""
    needed = pool_bytes(sizes, dtype)
    memory = device_memory(device)
    if memory is not None and needed > memory:
        raise ValueError(
            f"a pool of {describe(sizes)} ({dtype}) needs {needed:,} bytes, more than "
            f"the {memory:,} bytes of device {device}"
        )
    return needed
