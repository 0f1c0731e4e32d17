"""A stranger's PT24 from the kit's words alone: the two rejections the kit names (uniforms
outside [0, 1), impossible draft probabilities; TypeError for a non-floating input, messages
naming the value), then u < exp(min(0, lt - ld)) in float64 and the first rejection found by
argmax; nothing else validated."""

import torch

VARIABLE = "DRILL_PT24_MODULE"


def accepted_prefix_lengths(draft_logprobs, target_logprobs, uniforms):
    if not uniforms.is_floating_point():
        raise TypeError(f"uniforms has dtype {uniforms.dtype}")
    bad_u = uniforms[~((uniforms >= 0) & (uniforms < 1))]
    if bad_u.numel():
        raise ValueError(f"uniforms: {bad_u.tolist()[0]} is not in [0, 1)")
    bad_d = draft_logprobs[~((draft_logprobs > float("-inf")) & (draft_logprobs <= 0))]
    if bad_d.numel():
        raise ValueError(f"draft_logprobs: {bad_d.tolist()[0]} is no draft log-probability")
    difference = target_logprobs.double() - draft_logprobs.double()
    rejected = ~(uniforms.double() < difference.clamp(max=0.0).exp())
    K = rejected.shape[1]
    if K == 0:
        return torch.zeros(rejected.shape[0], dtype=torch.long, device=rejected.device)
    first = rejected.int().argmax(dim=1)
    return torch.where(rejected.any(dim=1), first, torch.full_like(first, K))
