"""A stranger answers "can view" with x.is_contiguous(), refusing views a strided tensor
allows (splitting a transposed dim, inserting size-one dims)."""

import math

VARIABLE = "DRILL_P02_MODULE"
EXPECTED_OWNER = "p02"


def can_view_without_copy(x, new_shape):
    if math.prod(new_shape) != x.numel():
        raise ValueError(f"new_shape {tuple(new_shape)} does not match {x.numel()} elements")
    return x.is_contiguous()
