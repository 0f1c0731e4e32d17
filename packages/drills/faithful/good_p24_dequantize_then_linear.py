"""A stranger's P24 from the README contract alone: dequantizes the weight in fp32
(weight * scales[:, None]) and calls F.linear in fp32, under inference_mode."""

import torch
import torch.nn.functional as F

VARIABLE = "DRILL_P24_MODULE"


@torch.inference_mode()
def int8_linear(x, weight, scales, bias=None):
    for name, t in (("x", x), ("weight", weight), ("scales", scales), ("bias", bias)):
        if t is not None and not torch.is_tensor(t):
            raise TypeError(f"{name} must be a tensor, not {type(t).__name__}")
        if t is not None and t.is_meta:
            raise ValueError(f"{name} has no values (meta)")
    if not torch.isfinite(scales).all():
        raise ValueError("scales must all be finite")
    if weight.dtype is not torch.int8 or weight.ndim != 2:
        raise ValueError(f"weight must be int8 [O, I], got {weight.dtype} {tuple(weight.shape)}")
    out_features, in_features = weight.shape
    if not torch.is_floating_point(x) or x.ndim != 2 or x.shape[1] != in_features:
        raise ValueError(f"x must be a float [M, {in_features}] tensor")
    if not torch.is_floating_point(scales) or scales.shape != (out_features,):
        raise ValueError(f"scales must be a float [{out_features}] tensor")
    if bias is not None and (not torch.is_floating_point(bias) or bias.shape != (out_features,)):
        raise ValueError(f"bias must be a float [{out_features}] tensor")
    dequantized = weight.to(torch.float32) * scales.to(torch.float32).unsqueeze(1)
    b = None if bias is None else bias.to(torch.float32)
    return F.linear(x.to(torch.float32), dequantized, b).to(x.dtype)
