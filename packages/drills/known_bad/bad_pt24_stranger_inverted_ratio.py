"""A stranger's PT24 that accepts with min(1, p_d / p_t): the ratio upside down, so a token
the target likes more than the draft is the one put at risk."""

import torch

VARIABLE = "DRILL_PT24_MODULE"
EXPECTED_OWNER = "pt24"


def accepted_prefix_lengths(draft_logprobs, target_logprobs, uniforms):
    if not bool(((uniforms >= 0) & (uniforms < 1)).all()):
        raise ValueError("uniforms must lie in [0, 1)")
    if not bool(((draft_logprobs > float("-inf")) & (draft_logprobs <= 0)).all()):
        raise ValueError("draft_logprobs must lie in (-inf, 0]")
    accepted = uniforms.double().log() < (draft_logprobs.double() - target_logprobs.double())
    return torch.cumprod(accepted.long(), dim=1).sum(dim=1)
