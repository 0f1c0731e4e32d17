"""A stranger's P01 from the README contract alone: a dict built from the storage's base
address plus the offset in bytes, contiguity by torch's rule, device and dtype as strings."""

import torch

VARIABLE = "DRILL_P01_MODULE"


def stride_report(x):
    if not torch.is_tensor(x):
        raise TypeError(f"x must be a tensor, got {type(x)!r}")
    base = x.untyped_storage().data_ptr()
    offset = x.storage_offset()
    return {
        "device": str(x.device),
        "dtype": str(x.dtype),
        "shape": list(x.size()),
        "stride": list(x.stride()),
        "storage_offset": offset,
        "contiguous": x.is_contiguous(),
        "data_ptr": base + offset * x.element_size(),
    }
