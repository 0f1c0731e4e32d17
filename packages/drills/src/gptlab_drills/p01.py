"""P01 tensor metadata report: what a tensor *is* besides its values.

A tensor is a window on a storage: `shape` and `stride` (in elements) say how an index
maps to an element, `storage_offset` (in elements) where the window starts, and
`data_ptr` is the address of its first element (the storage's base plus offset times
element size). A view (transpose, narrow, a reshape that needs no copy) shares the
storage; a clone does not.

Returns a dict with exactly these keys: shape (tuple of int), stride (tuple of int),
storage_offset (int), is_contiguous (bool), dtype (torch.dtype), device (torch.device),
data_ptr (int).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def stride_report(x: Tensor) -> dict[str, Any]:
    """The metadata of x, read off the tensor itself (nothing is copied or computed)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.layout != torch.strided:
        # A sparse tensor has no strides and no data pointer of its own to report.
        raise ValueError(f"x must be a strided tensor, got layout {x.layout}")
    return {
        "shape": tuple(x.shape),
        "stride": tuple(x.stride()),
        "storage_offset": x.storage_offset(),
        # torch's own rule: strides of size-1 dims do not matter, and neither does
        # anything in an empty tensor; recomputing row-major strides by hand gets both wrong.
        "is_contiguous": x.is_contiguous(),
        "dtype": x.dtype,
        "device": x.device,
        # The first element's address: base + storage_offset * element_size.
        "data_ptr": x.data_ptr(),
    }


__all__ = ["stride_report"]
