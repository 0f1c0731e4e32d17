"""A stranger reports the storage's base address as data_ptr, so a view that starts past
the first element claims the same address as its base."""

VARIABLE = "DRILL_P01_MODULE"
EXPECTED_OWNER = "p01"


def stride_report(x):
    if not hasattr(x, "untyped_storage"):
        raise TypeError("x must be a tensor")
    return {
        "shape": tuple(x.shape),
        "stride": x.stride(),
        "storage_offset": x.storage_offset(),
        "is_contiguous": x.is_contiguous(),
        "dtype": x.dtype,
        "device": x.device,
        "data_ptr": x.untyped_storage().data_ptr(),
    }
