"""A stranger's P02 from the kit's words alone: ask torch itself, on a meta stand-in with
x's sizes and strides (no data is touched or copied), whether view would succeed.
The kit names no rejection: bad shapes are whatever view says."""

import torch

VARIABLE = "DRILL_P02_MODULE"


def can_view_without_copy(x, new_shape):
    stand_in = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
    try:
        stand_in.view(new_shape)
    except RuntimeError as error:
        if "view size is not compatible" in str(error):
            return False
        raise
    return True
