"""What the kernels' suites share: where tensors live, seeded values, the ledger checks."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from . import LEDGER_FIELDS
from .ledger import grid_mismatch, traffic_mismatch


def device() -> torch.device:
    """CPU under Triton's interpreter; CUDA when kernels run compiled."""
    interpreted = os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available()
    return torch.device("cpu" if interpreted else "cuda")


def seeded(
    *shape: int, seed: int, dtype: torch.dtype = torch.float32, scale: float = 1.0
) -> Tensor:
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(*shape, generator=generator) * scale
    return values.to(dtype=dtype, device=device())


def ledger_gaps(ledger: object) -> list[str]:
    """The ledger fields an attempt's LEDGER leaves missing or empty (all of them if none)."""
    if not isinstance(ledger, dict):
        return list(LEDGER_FIELDS)
    return [f for f in LEDGER_FIELDS if not str(ledger.get(f, "")).strip()]


def assert_ledger_grid(
    kernel: object, function: str, launches: Sequence[Mapping[str, Any]], names: Mapping[str, int]
) -> None:
    """The Triton launches a graded call made (`gptlab_testkit.oracles.LaunchedGrids`)
    against the grids the kernel's LEDGER states for `function` (`ledger`). Launches are
    seen under the interpreter only: compiled (a GPU) the check is skipped."""
    if device().type != "cpu":
        import pytest  # tests only

        pytest.skip("launch grids are recorded under Triton's interpreter only")
    problem = grid_mismatch(getattr(kernel, "LEDGER", None), function, launches, names)
    assert problem is None, problem


def assert_ledger_traffic(
    kernel: object,
    function: str,
    names: Mapping[str, int],
    sizes: Mapping[str, int],
    moved: int,
) -> None:
    """The kernel's LEDGER traffic formula for `function`, at these shapes, against the
    bytes the call must move (`ledger.traffic_mismatch`)."""
    problem = traffic_mismatch(getattr(kernel, "LEDGER", None), function, names, sizes, moved)
    assert problem is None, problem


__all__ = ["assert_ledger_grid", "assert_ledger_traffic", "device", "ledger_gaps", "seeded"]
