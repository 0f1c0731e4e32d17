"""A stranger's PT13 from the kit's words alone: the one rejection the kit names (an id
outside the vocabulary, masked or not, a ValueError naming the value), then log_softmax in
float64, a gather, masked_fill for the masked slots, cast back to fp32."""

import torch

VARIABLE = "DRILL_PT13_MODULE"


def sequence_logprobs(logits, targets, valid):
    vocab = logits.shape[-1]
    low, high = (
        int(targets.min()) if targets.numel() else 0,
        int(targets.max()) if targets.numel() else 0,
    )
    if low < 0 or high >= vocab:
        raise ValueError(
            f"target id {low if low < 0 else high} is outside the vocabulary of {vocab}"
        )
    logprobs = torch.log_softmax(logits.double(), dim=-1)
    token = torch.gather(logprobs, 2, targets.long()[..., None])[..., 0]
    token = token.masked_fill(valid.logical_not(), 0.0)
    sums = token.sum(dim=1)
    out = torch.float64 if logits.dtype == torch.float64 else torch.float32
    return token.to(out), sums.to(out)
