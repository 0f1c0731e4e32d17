"""A stranger's PT17 from the README contract alone: per-row checks on the valid keys,
an explicit broadcast compare through unsqueeze, the mask built under inference_mode."""

import torch

VARIABLE = "DRILL_PT17_MODULE"


@torch.inference_mode()
def position_causal_mask(query_positions, key_positions, key_valid):
    if key_valid.dtype != torch.bool or key_valid.shape != key_positions.shape:
        raise ValueError("key_valid must be a bool tensor shaped like key_positions")
    if query_positions.dim() != 2 or key_positions.dim() != 2:
        raise ValueError("query_positions and key_positions must be 2-D")
    if query_positions.size(0) != key_positions.size(0):
        raise ValueError("query_positions and key_positions disagree on the batch size")
    for row in range(query_positions.size(0)):
        if torch.any(torch.diff(query_positions[row]) < 0):
            raise ValueError(f"query_positions row {row} decreases")
        real = key_positions[row][key_valid[row]]
        if torch.any(torch.diff(real) < 0):
            raise ValueError(f"key_positions row {row} decreases among valid keys")
    q = query_positions.unsqueeze(-1)  # [B, Tq, 1]
    k = key_positions.unsqueeze(-2)  # [B, 1, Tk]
    ok = torch.logical_and(k <= q, key_valid.unsqueeze(-2))
    return ok.unsqueeze(1)
