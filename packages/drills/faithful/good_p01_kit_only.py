"""A stranger's P01 from the kit's words alone: each field read from the tensor's own
metadata calls, sizes and strides as lists. The kit names no rejection: anything that is
not a tensor is left to Python's AttributeError."""

VARIABLE = "DRILL_P01_MODULE"


def stride_report(x):
    return {
        "shape": list(x.size()),
        "stride": list(x.stride()),
        "storage_offset": x.storage_offset(),
        "is_contiguous": x.is_contiguous(),
        "dtype": x.dtype,
        "device": x.device,
        "data_ptr": x.data_ptr(),
    }
