"""A stranger's P10 from the kit's words alone: a descending sort of the fp32 probabilities,
the mass before each token, a per-row boundary logit (the token that first reaches p), and
a threshold back in vocabulary order. The kit names no rejection: bad input is left to torch."""

import torch

VARIABLE = "DRILL_P10_MODULE"


def top_p_filter(logits, p):
    probs = torch.softmax(logits.float(), dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    before = sorted_probs.cumsum(dim=-1) - sorted_probs
    inside = before < p
    inside[..., 0] = True
    sorted_logits = logits.gather(-1, order)
    boundary = torch.where(inside, sorted_logits, torch.inf).amin(dim=-1, keepdim=True)
    return logits.masked_fill(logits < boundary, float("-inf"))
