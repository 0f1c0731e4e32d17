"""P08 stable temperature probabilities: softmax(logits / temperature) in fp32.

Shapes: logits [B, V] floating (any leading dims); temperature a finite number >= 0.
Returns fp32 probabilities of logits' shape, each row summing to 1. Half-precision logits
are upcast before dividing: logits near fp16's max overflow when divided by T < 1, and a
half softmax loses three decimal digits. Softmax subtracts the row max, so adding a
constant to a row changes nothing. Temperature 0 is the greedy limit: a one-hot row at
the first maximum (no division by zero).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._describe import described


def temperature_probs(logits: Tensor, temperature: float) -> Tensor:
    """fp32 softmax(logits / temperature) over the last dim; one-hot argmax at temperature 0."""
    if not isinstance(logits, Tensor) or logits.dim() < 1 or not logits.is_floating_point():
        raise ValueError(f"logits must be a floating tensor [B, V], got {described(logits)}")
    if logits.shape[-1] == 0:
        raise ValueError("logits must have at least one token per row")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"temperature must be a number, got {type(temperature).__name__}")
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be finite and >= 0, got {temperature}")
    scaled = logits.float()
    if temperature == 0:
        first_max = scaled.argmax(dim=-1, keepdim=True)  # argmax returns the first maximum
        return torch.zeros_like(scaled).scatter_(-1, first_max, 1.0)
    # The row max first, then divide in float64: a T too small for fp32 (1e-45) would
    # turn (logits / T) into inf - inf; (x - max) / T is 0 or negative, never NaN.
    shifted = scaled - scaled.amax(dim=-1, keepdim=True)
    return torch.softmax(shifted.double() / temperature, dim=-1).float()


__all__ = ["temperature_probs"]
