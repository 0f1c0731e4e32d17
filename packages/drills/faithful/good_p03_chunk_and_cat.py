"""A stranger's P03 from the README contract alone: split by chunking the channels and
stacking the chunks on a new head axis, merge by unbinding the heads and concatenating."""

import torch

VARIABLE = "DRILL_P03_MODULE"


@torch.inference_mode()
def split_heads(x, heads):
    if type(heads) is not int or heads <= 0:
        raise ValueError(f"heads must be a positive integer, got {heads!r}")
    if not torch.is_tensor(x) or x.ndim != 3:
        raise ValueError("x must be [B, T, C]")
    if x.shape[-1] % heads != 0:
        raise ValueError(f"x has {x.shape[-1]} channels, not a multiple of heads={heads}")
    return torch.stack(x.chunk(heads, dim=-1), dim=1)


@torch.inference_mode()
def merge_heads(x):
    if not torch.is_tensor(x) or x.ndim != 4:
        raise ValueError("x must be [B, H, T, D]")
    return torch.cat(x.unbind(dim=1), dim=-1).contiguous()
