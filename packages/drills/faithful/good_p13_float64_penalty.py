"""A stranger's P13 from the README alone: a [B, V] seen-mask, the sign-aware rule computed
in float64 and cast back to the logits' dtype (the README accepts float64 arithmetic)."""

import math

import torch

VARIABLE = "DRILL_P13_MODULE"


def apply_repetition_penalty(logits, history, penalty):
    if not torch.is_tensor(logits) or logits.dim() != 2 or not logits.is_floating_point():
        raise TypeError("logits must be a floating [B, V] tensor")
    if not torch.is_tensor(history) or history.dim() != 2 or history.shape[0] != logits.shape[0]:
        raise ValueError("history must be a [B, T] tensor with one row per logits row")
    if history.is_floating_point() or history.is_complex() or history.dtype == torch.bool:
        raise TypeError(f"history must hold integer ids, not {history.dtype}")
    if history.device != logits.device or logits.is_meta:
        raise ValueError("history and logits must share a real device")
    if bool(((history < 0) | (history >= logits.shape[1])).any()):
        raise ValueError(f"history holds an id outside 0..{logits.shape[1] - 1}")
    if isinstance(penalty, bool) or not isinstance(penalty, (int, float)):
        raise TypeError("penalty must be a number")
    if not (math.isfinite(penalty) and penalty > 0):
        raise ValueError(f"penalty must be finite and > 0, got {penalty}")
    seen = torch.zeros_like(logits, dtype=torch.bool)
    seen[torch.arange(logits.shape[0], device=logits.device)[:, None], history.long()] = True
    wide = logits.double()
    penalised = torch.where(wide > 0, wide / penalty, wide * penalty).to(logits.dtype)
    return torch.where(seen, penalised, logits)
