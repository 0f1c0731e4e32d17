"""A stranger calls a tensor contiguous when its last stride is 1, so a column slice or a
tensor with a gap between rows is reported contiguous."""

import torch

VARIABLE = "DRILL_P01_MODULE"
EXPECTED_OWNER = "p01"


def stride_report(x):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a tensor, not {type(x).__name__}")
    strides = x.stride()
    return {
        "shape": tuple(x.shape),
        "stride": strides,
        "storage_offset": x.storage_offset(),
        "contiguous": len(strides) == 0 or strides[-1] == 1,
        "dtype": x.dtype,
        "device": x.device,
        "data_ptr": x.data_ptr(),
    }
