"""A stranger's PT24 that compares u with p_t / p_d in the inputs' dtype: exp underflows to 0
for log-probabilities near -200 and below, and 0 / 0 is NaN, which rejects every such token."""

import torch

VARIABLE = "DRILL_PT24_MODULE"
EXPECTED_OWNER = "pt24"


def accepted_prefix_lengths(draft_logprobs, target_logprobs, uniforms):
    if not bool(((uniforms >= 0) & (uniforms < 1)).all()):
        raise ValueError("uniforms must lie in [0, 1)")
    if not bool(((draft_logprobs > float("-inf")) & (draft_logprobs <= 0)).all()):
        raise ValueError("draft_logprobs must lie in (-inf, 0]")
    ratio = target_logprobs.exp() / draft_logprobs.exp()
    accepted = uniforms < ratio.clamp(max=1.0)
    return torch.cumprod(accepted.long(), dim=1).sum(dim=1)
