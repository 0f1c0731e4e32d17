"""A stranger's PT29 that multiplies the logits by a 0/1 mask: a disallowed token gets logit
0, which softmax still gives probability, and an allowed -inf times 1 stays -inf but an
allowed +inf times 0 elsewhere is NaN."""

import torch

VARIABLE = "DRILL_PT29_MODULE"
EXPECTED_OWNER = "pt29"


def apply_allowed_tokens(logits, allowed_ids, offsets):
    B, V = logits.shape
    if bool(((allowed_ids < 0) | (allowed_ids >= V)).any()):
        raise ValueError("allowed_ids hold an id outside the vocabulary")
    if len(offsets) != B + 1 or int(offsets[0]) != 0 or int(offsets[-1]) != len(allowed_ids):
        raise ValueError("offsets are malformed")
    if bool((offsets.diff() < 0).any()):
        raise ValueError("offsets decrease")
    rows = torch.repeat_interleave(torch.arange(B, device=logits.device), offsets.diff())
    mask = torch.zeros_like(logits)
    mask[rows, allowed_ids] = 1
    return logits * mask
