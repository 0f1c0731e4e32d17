"""A stranger's P24 from the kit's words alone: einsum over the in-features in fp32 with the
int8 weight cast once, each output column scaled after the sum, then the bias; no validation
(the kit names none)."""

import torch

VARIABLE = "DRILL_P24_MODULE"


def int8_linear(x, weight, scales, bias=None):
    out = torch.einsum("mi,oi->mo", x.float(), weight.float()) * scales.float()
    if bias is not None:
        out = out + bias.float()
    return out.to(x.dtype)
