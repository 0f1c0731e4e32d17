"""A stranger's version that "keeps the dtype" by casting the output back to x's dtype: under
a bf16 autocast with fp32 inputs the caller gets fp32 back, not autocast's dtype."""

import torch

VARIABLE = "DRILL_PT12_MODULE"
EXPECTED_OWNER = "pt12"


def normalize_project(x, weight, eps):
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    wide = x.float()
    normed = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + eps)
    return torch.nn.functional.linear(normed.to(x.dtype), weight).to(x.dtype)
