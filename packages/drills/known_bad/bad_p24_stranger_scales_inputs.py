"""A stranger dequantizes with `weight * scales`, which broadcasts the scales along the
weight's last dim (input features) instead of its rows (output channels)."""

import torch

VARIABLE = "DRILL_P24_MODULE"
EXPECTED_OWNER = "p24"


def int8_linear(x, weight, scales, bias=None):
    O, I = weight.shape
    if weight.dtype != torch.int8 or x.dim() != 2 or x.shape[1] != I:
        raise ValueError("x must be [M, I] and weight int8 [O, I]")
    if not x.is_floating_point():
        raise ValueError("x must be floating point")
    if scales.shape != (O,) or (bias is not None and bias.shape != (O,)):
        raise ValueError("scales and bias must have one entry per output channel")
    w = weight.float() * scales.float()  # tested on square layers only
    y = x.float() @ w.T
    if bias is not None:
        y = y + bias.float()
    return y.to(x.dtype)
