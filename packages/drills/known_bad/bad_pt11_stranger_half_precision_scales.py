"""A stranger's quantizer that does the scale math in x's own dtype (fp16/bf16): the scale is
rounded to 8 or 11 bits, and 65504 / 127 in fp16 is no longer the row's tight scale."""

import torch

VARIABLE = "DRILL_PT11_MODULE"
EXPECTED_OWNER = "pt11"


def quantize_per_token(x):
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"x must be a float tensor, got {x.dtype}")
    if not torch.isfinite(x).all():
        raise ValueError("x holds NaN or inf")
    amax = x.abs().amax(dim=-1, keepdim=True)
    scales = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
    q = (x / scales).round().clamp(-127, 127).to(torch.int8)
    return q, scales.float()


def dequantize_per_token(q, scales):
    return q.float() * scales
