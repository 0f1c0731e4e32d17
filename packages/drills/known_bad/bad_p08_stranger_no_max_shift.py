"""A stranger writes softmax by hand without subtracting the row max: exp overflows to inf
and large or sharply tempered rows become NaN."""

import torch

VARIABLE = "DRILL_P08_MODULE"
EXPECTED_OWNER = "p08"


def temperature_probs(logits, temperature):
    if not logits.is_floating_point():
        raise ValueError("logits must be floating point")
    if temperature < 0 or temperature != temperature or temperature == float("inf"):
        raise ValueError("temperature must be finite and >= 0")
    x = logits.float()
    if temperature == 0:
        return torch.zeros_like(x).scatter_(-1, x.argmax(-1, keepdim=True), 1.0)
    e = torch.exp(x / temperature)
    return e / e.sum(dim=-1, keepdim=True)
