"""The next token from one row's logits: greedy, or a seeded draw from its own generator.

Temperature 0 is exact argmax. Otherwise one
``torch.multinomial(softmax(logits / temperature), 1, generator=request.generator)``
on the CPU, with the request's own ``torch.Generator`` seeded once at arrival: the
k-th draw of a request uses the k-th state of its generator whoever shares the
batch, and preemption recomputes tokens without drawing again.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .request import Request


def greedy_tokens(logits_RV: Tensor) -> list[int]:
    """Every row's exact argmax (temperature 0), in one call and one host read."""
    return [int(token) for token in logits_RV.argmax(dim=-1).tolist()]


def next_token(logits_V: Tensor, request: Request) -> int:
    if request.temperature == 0.0:
        return int(logits_V.argmax())
    probs_V = torch.softmax(logits_V.float().cpu() / request.temperature, dim=-1)
    return int(torch.multinomial(probs_V, 1, generator=request.generator))
