"""A stranger's P22 from the README contract alone: checks fields first, boolean-mask
indexing (a copy) for every field, the map from a cumulative sum; under inference_mode."""

import torch

VARIABLE = "DRILL_P22_MODULE"


@torch.inference_mode()
def compact_live_rows(fields, live):
    if not hasattr(fields, "items"):
        raise TypeError(f"fields must map names to tensors, not {type(fields).__name__}")
    for name, value in fields.items():
        if not torch.is_tensor(value) or value.ndim < 1:
            raise ValueError(f"field {name} must be a tensor with a batch dimension")
    if not torch.is_tensor(live) or live.ndim != 1 or live.dtype is not torch.bool:
        raise ValueError("live must be a one-dimensional boolean tensor")
    if live.is_meta:
        raise ValueError("live has no values (meta)")
    for name, value in fields.items():
        if value.shape[0] != live.shape[0]:
            raise ValueError(f"field {name} has {value.shape[0]} rows but live has {live.shape[0]}")
    new_index = torch.cumsum(live.to(torch.int64), dim=0) - 1
    old_to_new = torch.where(live, new_index, torch.full_like(new_index, -1))
    return {name: value[live] for name, value in fields.items()}, old_to_new
