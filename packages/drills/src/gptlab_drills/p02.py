"""P02 view compatibility: can `x.view(new_shape)` reinterpret x's storage without a copy?

A view keeps the storage and only rewrites shape and stride. That works when every new
dimension lies inside one *chunk* of x: a run of old dims whose strides chain, outer
stride == inner stride * inner size, so the run walks memory like one flat dim. Size-one
dims never break a chunk (their stride is never used), and an offset changes nothing.
Each chunk must then be covered exactly by consecutive new dims (ignoring new 1s).

Shapes: x any tensor; new_shape a sequence of non-negative ints with the same element
count (-1 is not inferred). Returns a bool equal to "x.view(new_shape) would succeed".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor


def can_view_without_copy(x: Tensor, new_shape: Sequence[int]) -> bool:
    """True iff x.view(new_shape) is legal (no copy needed), else False."""
    sizes = _check(x, new_shape)
    if x.numel() == 0:
        return True  # nothing to address: any shape of zero elements is a view
    chunks = _chunks(x)
    new = [size for size in sizes if size != 1]
    i = 0
    for chunk in chunks:
        covered = 1
        while covered < chunk and i < len(new):
            covered *= new[i]
            i += 1
        if covered != chunk:
            return False  # a new dim straddles two chunks: its stride cannot be one number
    return True


def _chunks(x: Tensor) -> list[int]:
    """Element counts of the runs of x's dims that address memory like one flat dim."""
    chunks: list[int] = []
    outer_stride = 0
    for size, stride in zip(x.shape, x.stride(), strict=True):
        if size == 1:
            continue  # a size-one dim has no step, whatever its stride says
        if chunks and outer_stride == stride * size:
            chunks[-1] *= size
        else:
            chunks.append(size)
        outer_stride = stride
    return chunks


def _check(x: Tensor, new_shape: Sequence[int]) -> list[int]:
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.layout != torch.strided:
        raise ValueError(f"x must be a strided tensor, got layout {x.layout}")
    if isinstance(new_shape, (str, bytes)) or not isinstance(new_shape, Sequence):
        raise TypeError(f"new_shape must be a sequence of ints, got {type(new_shape).__name__}")
    sizes = list(new_shape)
    if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in sizes):
        raise ValueError(f"new_shape must hold non-negative ints, got {new_shape!r}")
    if math.prod(sizes) != x.numel():
        raise ValueError(
            f"new_shape {tuple(sizes)} holds {math.prod(sizes)} elements, x {x.numel()}"
        )
    return sizes


__all__ = ["can_view_without_copy"]
