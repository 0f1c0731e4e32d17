"""A stranger's P13 from the README alone: a row loop over distinct ids (a set per row)
whose errors name the offending value ('token id 6 is outside the vocabulary', 'penalty
nan is not a finite positive number') rather than the argument."""

import math

import torch

VARIABLE = "DRILL_P13_MODULE"


def _check(logits, history, penalty):
    if not torch.is_tensor(logits) or logits.dim() != 2 or not logits.is_floating_point():
        raise TypeError(f"expected floating [B, V] logits, got {type(logits).__name__}")
    if not torch.is_tensor(history) or history.is_floating_point() or history.dtype == torch.bool:
        raise TypeError(f"expected integer token ids, got {getattr(history, 'dtype', history)!r}")
    if history.dim() != 2 or history.shape[0] != logits.shape[0]:
        raise ValueError(f"history {tuple(history.shape)} needs {logits.shape[0]} rows")
    if history.device != logits.device or history.is_meta or logits.is_meta:
        raise ValueError(f"history is on {history.device}, logits on {logits.device}")
    for token in history.flatten().tolist():
        if not 0 <= token < logits.shape[1]:
            raise ValueError(f"token id {token} is outside the vocabulary")
    if isinstance(penalty, bool) or not isinstance(penalty, (int, float)):
        raise TypeError(f"penalty {penalty!r} is not a number")
    if not (math.isfinite(penalty) and penalty > 0):
        raise ValueError(f"{penalty} is not a finite positive number")


def apply_repetition_penalty(logits, history, penalty):
    _check(logits, history, penalty)
    out = logits.clone()
    for b, row in enumerate(history.tolist()):
        for token in set(row):
            x = out[b, token]
            out[b, token] = x / penalty if x > 0 else x * penalty
    return out
