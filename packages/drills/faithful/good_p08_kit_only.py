"""A stranger's P08 from the kit's words alone: the one rejection the kit names (a negative
temperature), a greedy one-hot from argmax at temperature 0, else torch.softmax of the
fp32 logits over the temperature; everything else left to torch."""

import torch

VARIABLE = "DRILL_P08_MODULE"


def temperature_probs(logits, temperature):
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    wide = logits if logits.dtype == torch.float64 else logits.float()
    if temperature == 0:
        picked = wide.argmax(dim=-1, keepdim=True)
        return torch.zeros_like(wide).scatter_(-1, picked, 1.0)
    return torch.softmax(wide / temperature, dim=-1)
