"""A stranger's P07 from the README alone: shape first, torch.where against a -inf scalar,
under inference_mode."""

import torch

VARIABLE = "DRILL_P07_MODULE"


@torch.inference_mode()
def masked_logits(logits, allowed):
    if not torch.is_tensor(allowed) or allowed.shape != getattr(logits, "shape", None):
        raise ValueError("allowed must match logits in shape")
    if allowed.dtype is not torch.bool:
        raise TypeError(f"allowed must be torch.bool, not {allowed.dtype}")
    if not logits.dtype.is_floating_point:
        raise TypeError(f"logits must be floating, not {logits.dtype}")
    rows_ok = allowed.any(dim=-1)
    if not bool(rows_ok.all()):
        raise ValueError("allowed: some row permits no token")
    return torch.where(allowed, logits, torch.tensor(float("-inf"), dtype=logits.dtype))
