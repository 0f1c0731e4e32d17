"""A stranger's P10 from the README alone: sorts ascending, finds the mass strictly more
probable than each token from the tail, compares logits against a per-row threshold,
under inference_mode."""

import math

import torch

VARIABLE = "DRILL_P10_MODULE"


@torch.inference_mode()
def top_p_filter(logits, p):
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not (0 < p <= 1):
        raise ValueError(f"p must be a number in (0, 1], got {p!r}")
    if not torch.is_tensor(logits) or not logits.is_floating_point():
        raise ValueError("logits must be a floating tensor")
    if logits.dim() == 0 or logits.shape[-1] == 0:
        raise ValueError(f"logits needs a vocabulary of at least one token: {tuple(logits.shape)}")
    if p == 1:
        return logits.clone()
    asc, _ = logits.float().sort(dim=-1)
    probs = asc.softmax(dim=-1)
    # mass of tokens sorted after (more probable than) each position
    above = probs.flip(-1).cumsum(-1).flip(-1) - probs
    candidate = above < p  # these tokens are in some prefix still short of p
    threshold = torch.where(candidate, asc, torch.full_like(asc, math.inf)).amin(-1, keepdim=True)
    return logits.masked_fill(logits.float() < threshold, float("-inf"))
