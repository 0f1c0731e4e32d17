"""A stranger's P13 from the README alone (HF-style): penalty checked first, gather the
history's logits, apply the sign-aware rule, scatter into a clone (duplicates write the
same value, so they count once), under inference_mode."""

import math

import torch

VARIABLE = "DRILL_P13_MODULE"


@torch.inference_mode()
def apply_repetition_penalty(logits, history, penalty):
    if not torch.is_tensor(logits) or not logits.is_floating_point() or logits.is_meta:
        raise ValueError("logits must be a floating tensor with values")
    if isinstance(penalty, bool):
        raise TypeError("penalty must be a number, not a bool")
    if not isinstance(penalty, (int, float)) or not math.isfinite(penalty) or penalty <= 0:
        raise ValueError(f"penalty must be a finite number > 0, got {penalty!r}")
    if (
        not torch.is_tensor(history)
        or history.dim() != 2
        or history.dtype
        not in (
            torch.int64,
            torch.int32,
            torch.int16,
            torch.int8,
            torch.uint8,
        )
    ):
        raise ValueError("history must be an integer [B, T] tensor")
    if logits.dim() != 2 or history.size(0) != logits.size(0):
        raise ValueError("history must have one row per logits row")
    if history.device != logits.device:
        raise ValueError("history must be on logits' device")
    vocab = logits.size(1)
    if history.numel() and (int(history.min()) < 0 or int(history.max()) >= vocab):
        raise ValueError(f"history has a token id outside 0..{vocab - 1}")
    index = history.long()
    picked = logits.gather(1, index)
    picked = torch.where(picked < 0, picked * penalty, picked / penalty)
    return logits.clone().scatter_(1, index, picked)
