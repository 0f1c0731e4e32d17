"""P11 deterministic sampler: one next token per row, reproducible from the caller's generator.

Shapes: logits [B, V] float; returns token ids [B] long on logits' device.
Order of operations (each optional step skipped when off): divide by temperature (fp32),
top-k (P09's threshold rule), top-p on the tempered, top-k-filtered distribution (P10),
softmax, then exactly one `torch.multinomial(probs, 1, generator=generator)` for the batch.
Temperature 0 is greedy: argmax of the logits, no draw, the generator untouched; a positive
temperature that is 0 in fp32 (1e-50) is refused, not divided by.
Every argument and every row is checked before anything is drawn, so a rejected call
leaves the generator's state exactly as it was.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._describe import described
from .p09 import top_k_filter
from .p10 import top_p_filter


def sample_next_token(
    logits: Tensor,
    *,
    temperature: float,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator,
) -> Tensor:
    """Token ids [B] (long): greedy at temperature 0, else one multinomial draw per row."""
    _check(logits, temperature, top_k, top_p, generator)
    if temperature == 0:
        return logits.argmax(dim=-1)
    # fp32, shifted by the row maximum first: half logits overflow when divided by T < 1, and
    # a tiny T sends x / T to inf (a NaN softmax); x - max <= 0 only ever underflows to -inf.
    wide = logits.float()
    scaled = (wide - wide.amax(dim=-1, keepdim=True)) / temperature
    if top_k is not None and top_k > 0:
        scaled = top_k_filter(scaled, top_k)
    if top_p is not None:
        scaled = top_p_filter(scaled, top_p)
    probs = torch.softmax(scaled, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def _in_fp32(value: float) -> float:
    """`value` rounded to fp32, as the division by the temperature sees it."""
    return float(torch.tensor(value, dtype=torch.float32))


def _check(
    logits: Tensor,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    generator: torch.Generator,
) -> None:
    """Reject every bad argument and row before the generator is touched."""
    if not isinstance(logits, Tensor) or logits.dim() != 2 or not logits.is_floating_point():
        raise ValueError(f"logits must be a floating [B, V] tensor, got {described(logits)}")
    B, V = logits.shape
    if B == 0 or V == 0:
        raise ValueError(f"logits must have at least one row and one token, got {(B, V)}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"temperature must be a float, got {type(temperature).__name__}")
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be finite and >= 0, got {temperature}")
    if temperature > 0 and _in_fp32(temperature) == 0:
        # The tempered logits are divided in fp32, where this temperature is 0: x / 0.
        raise ValueError(f"temperature {temperature} is positive but 0 in fp32: use 0 (greedy)")
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int):
            raise TypeError(f"top_k must be an int or None, got {type(top_k).__name__}")
        if not 0 <= top_k <= V:
            raise ValueError(f"top_k must be in 0..{V} (0 or None: off), got {top_k}")
    if top_p is not None:
        if isinstance(top_p, bool) or not isinstance(top_p, (int, float)):
            raise TypeError(f"top_p must be a float or None, got {type(top_p).__name__}")
        if not (math.isfinite(top_p) and 0 < top_p <= 1):
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if generator.device != logits.device:
        raise ValueError(f"generator is on {generator.device}, logits on {logits.device}")
    # A NaN or +inf logit, or a row with no finite logit, has no distribution to draw from.
    broken = torch.isnan(logits) | (logits == float("inf"))
    empty = ~torch.isfinite(logits).any(dim=-1)
    bad_rows = (broken.any(dim=-1) | empty).nonzero().flatten().tolist()
    if bad_rows:
        raise ValueError(f"logits row {bad_rows[0]} has a NaN or +inf logit or no finite logit")


__all__ = ["sample_next_token"]
