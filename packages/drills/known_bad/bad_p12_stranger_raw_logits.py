"""A stranger adds raw logits to the beam scores (no log_softmax): beams whose logits are
merely shifted look better, and scores stop being log-probabilities."""

import torch

VARIABLE = "DRILL_P12_MODULE"
EXPECTED_OWNER = "p12"


def beam_step(scores, logits, finished=None, eos_token_id=None):
    B, K = scores.shape
    if logits.ndim != 3 or logits.shape[:2] != (B, K):
        raise ValueError("logits must be [B, K, V] matching scores")
    if torch.isnan(scores).any() or torch.isposinf(scores).any():
        raise ValueError("scores holds NaN or +inf")
    V = logits.shape[2]
    if finished is not None:
        if finished.shape != (B, K) or finished.dtype != torch.bool:
            raise ValueError("finished must be a bool [B, K] tensor")
        if eos_token_id is None or not 0 <= eos_token_id < V:
            raise ValueError("eos_token_id must be a token id")
    cand = scores[:, :, None] + logits.float()
    if finished is not None:
        eos_only = torch.full_like(cand, float("-inf"))
        eos_only[:, :, eos_token_id] = scores
        cand = torch.where(finished[:, :, None], eos_only, cand)
    best, flat = cand.reshape(B, K * V).sort(dim=1, descending=True, stable=True)
    return best[:, :K], flat[:, :K] % V, flat[:, :K] // V
