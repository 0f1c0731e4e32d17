"""A stranger's P12 from the kit's words alone: every candidate scored as the beam's score
plus log_softmax in fp32, a finished beam reduced to its one EOS candidate, then a stable
descending sort of the flattened [B, K*V] candidates (ties keep the lower flat index).
The kit names no rejection: bad input is left to torch."""

import torch

VARIABLE = "DRILL_P12_MODULE"


def beam_step(scores, logits, finished=None, eos_token_id=None):
    B, K, V = logits.shape
    base = scores.float()
    candidates = base[:, :, None] + torch.log_softmax(logits.float(), dim=-1)
    if finished is not None:
        only_eos = torch.full_like(candidates, float("-inf"))
        only_eos[:, :, eos_token_id] = base
        candidates = torch.where(finished[:, :, None], only_eos, candidates)
    flat = candidates.reshape(B, K * V)
    ranked, order = torch.sort(flat, dim=-1, descending=True, stable=True)
    best = order[:, :K]
    return ranked[:, :K], best % V, torch.div(best, V, rounding_mode="floor")
