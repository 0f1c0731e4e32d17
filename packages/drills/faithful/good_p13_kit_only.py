"""A stranger's P13 from the kit's words alone: the one rejection the kit names (an id outside
the vocabulary), a [B, V] seen-mask built by scatter (a repeat counts once), then the
sign-aware rule through torch.where; everything else left to torch."""

import torch

VARIABLE = "DRILL_P13_MODULE"


def apply_repetition_penalty(logits, history, penalty):
    vocab = logits.shape[-1]
    if bool(((history < 0) | (history >= vocab)).any()):
        raise ValueError(f"history holds an id outside 0..{vocab - 1}")
    seen = torch.zeros(logits.shape, dtype=torch.bool, device=logits.device)
    seen.scatter_(1, history.long(), True)
    penalised = torch.where(logits > 0, logits / penalty, logits * penalty)
    return torch.where(seen, penalised, logits)
