"""A stranger's PT13 that computes in the logits' own dtype: bf16/fp16 logprobs and sums,
rounded at every step (and returned in that dtype)."""

import torch

VARIABLE = "DRILL_PT13_MODULE"
EXPECTED_OWNER = "pt13"


def sequence_logprobs(logits, targets, valid):
    V = logits.shape[-1]
    if bool(((targets < 0) | (targets >= V)).any()):
        raise ValueError(f"targets must lie in [0, {V})")
    logprobs = torch.log_softmax(logits, dim=-1)
    token = logprobs.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)
    token = torch.where(valid, token, torch.zeros_like(token))
    return token, token.sum(-1)
