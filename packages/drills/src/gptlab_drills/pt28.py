"""PT28 batch-order-independent sampling: a request's draw never depends on its batch row.

Every request owns a torch.Generator, made once from its own seed
(`torch.Generator().manual_seed(seed)`) and kept with the request, so its state is the
request's sampling history. A batch step draws each sampled row with that row's own
generator and nothing else: reordering the batch, or adding and removing other requests,
cannot change what a request draws. Greedy rows (temperature 0) take the argmax and leave
their generator alone. Every row is checked, its tempered distribution included, before
any generator draws: a rejected call leaves every generator as it was.

Shapes: logits [B, V] float; request_ids B distinct hashable ids; generators a mapping
id -> Generator holding every id (extra entries are left alone); temperatures B floats
(a sequence or a [B] tensor). Returns token ids [B] (long).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

import torch
from torch import Tensor

from ._describe import described


def sample_batch(
    logits: Tensor,
    request_ids: Sequence[Hashable],
    generators: Mapping[Hashable, torch.Generator],
    temperatures: Sequence[float] | Tensor,
) -> Tensor:
    """Row b: argmax if temperatures[b] == 0, else one draw with generators[request_ids[b]]."""
    ids, temps = _check(logits, request_ids, generators, temperatures)
    tokens = logits.argmax(dim=-1)  # greedy rows keep these
    # Every sampled row's distribution first, each checked, and only then any draw: a row
    # that cannot be sampled must not leave an earlier row's generator advanced.
    tempered = {row: _tempered(logits, row, t) for row, t in enumerate(temps) if t != 0}
    for row, (request, temperature) in enumerate(zip(ids, temps, strict=True)):
        if temperature == 0:
            continue
        # One row at a time: the draw reads only this request's logits and generator, the
        # same call an isolated batch of one would make.
        tokens[row] = torch.multinomial(tempered[row], 1, generator=generators[request])[0, 0]
    return tokens


def _tempered(logits: Tensor, row: int, temperature: float) -> Tensor:
    """softmax(logits[row] / temperature) in fp32, [1, V]; ValueError where it overflows."""
    probs = torch.softmax(logits[row : row + 1].float() / temperature, dim=-1)
    if not bool(torch.isfinite(probs).all()):  # a logit / temperature beyond fp32's range
        raise ValueError(
            f"temperatures[{row}] = {temperature} is too small for logits row {row}: "
            "logits / temperature overflows fp32"
        )
    return probs


def _check(
    logits: Tensor,
    request_ids: Sequence[Hashable],
    generators: Mapping[Hashable, torch.Generator],
    temperatures: Sequence[float] | Tensor,
) -> tuple[list[Hashable], list[float]]:
    """Reject every bad argument before any generator is touched."""
    if not isinstance(logits, Tensor) or logits.dim() != 2 or not logits.is_floating_point():
        raise ValueError(f"logits must be a floating [B, V] tensor, got {described(logits)}")
    if logits.is_meta:  # no values to check or sample
        raise ValueError("logits is a meta tensor: there is nothing to sample")
    B, V = logits.shape
    if V == 0:
        raise ValueError("logits must have at least one token per row")
    ids = list(request_ids)
    if len(ids) != B:
        raise ValueError(f"request_ids must name {B} requests (one per row), got {len(ids)}")
    if not all(isinstance(i, Hashable) for i in ids):
        raise TypeError(f"request_ids must be hashable ids, got {[type(i).__name__ for i in ids]}")
    if len(set(ids)) != B:
        repeated = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"request_ids repeats {repeated!r}: one row per request")
    temps = temperatures.tolist() if isinstance(temperatures, Tensor) else list(temperatures)
    if len(temps) != B:
        raise ValueError(f"temperatures must hold {B} values (one per row), got {len(temps)}")
    for row, temperature in enumerate(temps):
        number = isinstance(temperature, int | float) and not isinstance(temperature, bool)
        if not (number and math.isfinite(temperature)):
            raise ValueError(f"temperatures[{row}] must be a finite number, got {temperature!r}")
        if temperature < 0:
            raise ValueError(f"temperatures[{row}] must be >= 0, got {temperature}")
        if temperature > 0 and float(torch.tensor(temperature, dtype=torch.float32)) == 0:
            # The row's logits are divided in fp32, where this temperature is 0: x / 0.
            raise ValueError(f"temperatures[{row}] = {temperature} is positive but 0 in fp32")
    if not isinstance(generators, Mapping):
        raise TypeError(f"generators must map request id -> Generator, got {type(generators)}")
    owners: dict[int, Hashable] = {}
    for request in ids:
        generator = generators.get(request)
        if not isinstance(generator, torch.Generator):
            raise ValueError(f"generators has no torch.Generator for request {request!r}")
        if id(generator) in owners:
            other = owners[id(generator)]
            raise ValueError(f"generators: requests {other!r} and {request!r} share one Generator")
        owners[id(generator)] = request
    broken = torch.isnan(logits) | (logits == float("inf"))
    bad = (broken.any(dim=-1) | ~torch.isfinite(logits).any(dim=-1)).nonzero().flatten()
    if len(bad):
        raise ValueError(f"logits row {int(bad[0])} has a NaN or +inf logit or no finite logit")
    return ids, [float(t) for t in temps]


__all__ = ["sample_batch"]
