"""A stranger's PT12 from the kit's row alone: the statistics in float64 (wider than asked)
inside an autocast-disabled block, torch.rsqrt avoided for a division by sqrt, the normed
rows cast back to x's dtype, x @ weight.T for the projection (matmul is autocast's too)."""

import torch

VARIABLE = "DRILL_PT12_MODULE"


def normalize_project(x, weight, eps):
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    kind = x.device.type
    off = torch.autocast(kind, enabled=False) if kind in ("cpu", "cuda") else None
    if off is not None:
        off.__enter__()
    try:
        wide = x.double()
        normed = (wide / (wide.pow(2).mean(-1, keepdim=True) + eps).sqrt()).to(x.dtype)
    finally:
        if off is not None:
            off.__exit__(None, None, None)
    return normed @ weight.T
