"""A stranger divides and normalises in the logits' own dtype: fp16 logits overflow when
divided by T < 1, and half-precision probabilities come back."""

import torch

VARIABLE = "DRILL_P08_MODULE"
EXPECTED_OWNER = "p08"


def temperature_probs(logits, temperature):
    if not logits.is_floating_point():
        raise ValueError("logits must be floating point")
    if not temperature >= 0 or temperature == float("inf"):
        raise ValueError("temperature must be finite and >= 0")
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits / temperature, dim=-1)
