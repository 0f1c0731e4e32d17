"""A stranger's PT13 that builds the probability tensor, softmax in fp32, then takes the log
of each target's probability: a probability that underflows becomes log(0) = -inf."""

import torch

VARIABLE = "DRILL_PT13_MODULE"
EXPECTED_OWNER = "pt13"


def sequence_logprobs(logits, targets, valid):
    V = logits.shape[-1]
    if bool(((targets < 0) | (targets >= V)).any()):
        raise ValueError(f"targets must lie in [0, {V})")
    probs = torch.softmax(logits.float(), dim=-1)
    token = probs.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1).log()
    token = token.masked_fill(~valid, 0.0)
    return token, token.sum(-1)
