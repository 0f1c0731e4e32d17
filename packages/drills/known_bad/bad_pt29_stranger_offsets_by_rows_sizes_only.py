"""A stranger's PT29 that checks only that the offsets never decrease: a first offset other
than 0, a last one other than M or a wrong count of entries goes through (and reads ids of
the wrong rows, or fails inside torch)."""

import torch

VARIABLE = "DRILL_PT29_MODULE"
EXPECTED_OWNER = "pt29"


def apply_allowed_tokens(logits, allowed_ids, offsets):
    B, V = logits.shape
    if bool(((allowed_ids < 0) | (allowed_ids >= V)).any()):
        raise ValueError("allowed_ids hold an id outside the vocabulary")
    if bool((offsets.diff() < 0).any()):
        raise ValueError("offsets decrease")
    out = torch.full_like(logits, float("-inf"))
    for b in range(B):
        ids = allowed_ids[int(offsets[b]) : int(offsets[b + 1])]
        out[b, ids] = logits[b, ids]
    return out
