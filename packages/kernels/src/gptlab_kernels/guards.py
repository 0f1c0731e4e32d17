"""Guard regions: catch a kernel's out-of-bounds loads and stores, which nothing else does.

Triton's interpreter (like a GPU) reads and writes past a buffer without any error. So
each buffer a test hands a kernel is a view inside a larger allocation: `GUARD` elements
on either side (at least a block wide) and the holes between a strided view's elements
hold a known fill. An input's fill is poison (NaN): an unmasked load pulls it into the
result. An output's fill is a canary: an unmasked store changes it. The canaries are
compared on the allocation itself after the call; a judged run ships the allocation
whole to the candidate's worker and back (`WHOLE_ALLOCATION`), so the
guard bytes compared are the ones the kernel could reach.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

# The grader's wire sends a tensor carrying this attribute with every byte of its storage,
# both ways (gptlab_worker.wire.WHOLE_ALLOCATION; named here so that this package needs no
# grader at run time, and checked equal by the suite).
WHOLE_ALLOCATION = "_gptlab_whole_allocation"
GUARD = 2048  # elements on each side: more than any block this lane's kernels use
POISON = float("nan")
CANARY = -7777.0
SIDES = ("before", "between", "after")
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@dataclass
class Guarded:
    """One buffer: `view` (what the kernel gets) inside `allocation` (flat, guards included)."""

    name: str
    view: Tensor
    allocation: Tensor
    initial: Tensor  # the allocation's bits when made

    def inside(self) -> Tensor:
        """[allocation size] bool: True where an element of the view lies."""
        mask = torch.zeros(self.allocation.shape, dtype=torch.bool, device=self.allocation.device)
        mask.as_strided(self.view.shape, self.view.stride(), self.view.storage_offset()).fill_(True)
        return mask

    def region(self, side: str) -> Tensor:
        """[allocation size] bool: the guard elements `before` the view's first element,
        `after` its last, or `between` its elements (a strided view's holes)."""
        index = torch.arange(self.allocation.numel(), device=self.allocation.device)
        first = self.view.storage_offset()
        last = first + sum(
            (s - 1) * st for s, st in zip(self.view.shape, self.view.stride(), strict=True)
        )
        outside = ~self.inside()
        if side == "before":
            return outside & (index < first)
        if side == "after":
            return outside & (index > last)
        return outside & (index >= first) & (index <= last)

    def changed(self, side: str) -> int:
        """How many guard elements on this side no longer hold their fill's bits."""
        now = self.allocation.view(_BITS[self.allocation.element_size()])
        return int(((now != self.initial) & self.region(side)).sum())


def guarded(name: str, values: Tensor, stride: tuple[int, ...] | None = None,
            fill: float = POISON, guard: int = GUARD) -> Guarded:  # fmt: skip
    """A copy of `values` as a view with these element strides (default: contiguous) in an
    allocation filled with `fill` everywhere else, `guard` elements on either side."""
    shape = tuple(values.shape)
    if stride is None:
        stride = tuple(torch.empty(shape, device="meta").stride())
    span = (
        1 + sum((s - 1) * st for s, st in zip(shape, stride, strict=True)) if values.numel() else 0
    )
    allocation = torch.full((span + 2 * guard,), fill, dtype=values.dtype, device=values.device)
    view = allocation.as_strided(shape, stride, guard)
    view.copy_(values)
    initial = allocation.view(_BITS[allocation.element_size()]).clone()
    setattr(view, WHOLE_ALLOCATION, True)
    return Guarded(name, view, allocation, initial)


def guarded_output(name: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device,
                   stride: tuple[int, ...] | None = None) -> Guarded:  # fmt: skip
    """An output buffer: the view and its guards all hold the canary (an element the kernel
    never writes keeps it, so a value check sees it too)."""
    canary = canary_for(dtype)
    values = torch.full(shape, canary, dtype=dtype, device=device)
    return guarded(name, values, stride, fill=canary)


def canary_for(dtype: torch.dtype) -> float:
    """CANARY, or an integer dtype's minimum (-128 for int8: a level no symmetric
    quantizer writes)."""
    return CANARY if dtype.is_floating_point else float(torch.iinfo(dtype).min)


def assert_no_store_outside(*buffers: Guarded) -> None:
    """Every guard element of every buffer holds its fill: no store landed outside a view."""
    for buffer in buffers:
        for side in SIDES:
            count = buffer.changed(side)
            if count:
                raise AssertionError(
                    f"{buffer.name}: an out-of-bounds store changed {count} guard element(s) "
                    f"{side} the buffer's elements (an unmasked or misaddressed tl.store)"
                )


def _shows(result: Tensor, poison: float) -> bool:
    """Does the poison show in the result? NaN as NaN; an infinite poison (for a max, which
    ignores NaN: see the README) as any value that is not finite."""
    values = result.float()
    return bool(torch.isnan(values).any() if math.isnan(poison) else (~values.isfinite()).any())


def poison_readers(run: Callable[[], Tensor], inputs: list[Guarded],
                   poison: float = POISON) -> list[str]:  # fmt: skip
    """Which guard regions reach the result: each poisoned alone (every other guard
    element zero) and the kernel run again; a region whose poison shows was read."""
    found = []
    for target in inputs:
        for side in SIDES:
            region = target.region(side)
            if not bool(region.any()):
                continue
            for buffer in inputs:
                buffer.allocation[~buffer.inside()] = 0
            target.allocation[region] = poison
            if _shows(run(), poison):
                found.append(f"{target.name} ({side} its elements)")
    return found


def assert_no_load_outside(run: Callable[[], Tensor], result: Tensor, inputs: list[Guarded],
                           what: str, poison: float = POISON) -> None:  # fmt: skip
    """The result shows no poison (NaN; or, for an infinite poison, nothing non-finite: the
    tests' own values are finite): else name the buffers and sides whose poison it read (an
    unmasked tl.load), found by running again."""
    if not _shows(result, poison):
        return
    readers = poison_readers(run, inputs, poison) or ["no single guard region: from elsewhere"]
    raise AssertionError(
        f"{what}: poison ({poison}) in the result: an out-of-bounds load read {', '.join(readers)}"
    )


__all__ = [
    "CANARY", "GUARD", "POISON", "WHOLE_ALLOCATION", "Guarded", "assert_no_load_outside",
    "assert_no_store_outside", "canary_for", "guarded", "guarded_output", "poison_readers",
]  # fmt: skip
