"""A stranger removes every sorted token whose cumulative probability exceeds p, without the
one-place shift: the token that crosses p is dropped, so the kept mass falls short of p."""

import torch

VARIABLE = "DRILL_P10_MODULE"
EXPECTED_OWNER = "p10"


def top_p_filter(logits, p):
    if not 0 < p <= 1:
        raise ValueError(f"p must be in (0, 1], got {p}")
    ordered, index = torch.sort(logits, dim=-1, descending=True)
    cumulative = ordered.float().softmax(dim=-1).cumsum(dim=-1)
    remove = cumulative > p
    remove[..., 0] = False
    remove = remove.scatter(-1, index, remove)
    return logits.masked_fill(remove, float("-inf"))
