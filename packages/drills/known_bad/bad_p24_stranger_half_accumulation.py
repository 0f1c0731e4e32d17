"""A stranger casts the int8 weight to x's dtype and multiplies there, so fp16 inputs
accumulate (and overflow) in half precision before the scales shrink the sums."""

import torch

VARIABLE = "DRILL_P24_MODULE"
EXPECTED_OWNER = "p24"


def int8_linear(x, weight, scales, bias=None):
    if weight.dtype != torch.int8:
        raise ValueError("weight must be int8")
    if not x.is_floating_point():
        raise ValueError("x must be floating point")
    if x.shape[-1] != weight.shape[1]:
        raise ValueError("x and weight in-features differ")
    if scales.shape != (weight.shape[0],):
        raise ValueError("scales needs one entry per output channel")
    if bias is not None and bias.shape != (weight.shape[0],):
        raise ValueError("bias needs one entry per output channel")
    y = (x @ weight.to(x.dtype).T) * scales.to(x.dtype)
    return y + bias.to(x.dtype) if bias is not None else y
