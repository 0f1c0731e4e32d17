"""The Triton lane: one reference kernel and its launcher per module (T01, T02, T03).

Each module holds a `@triton.jit` kernel, the launcher a learner's attempt must match
(its graded names) and a `LEDGER`: the eight answers the kit asks of every kernel (grid,
tile, pointer formula, mask, traffic, occupancy limiter, oracle, benchmark method).

On a machine without CUDA the kernels run under Triton's interpreter: importing a kernel
module sets `TRITON_INTERPRET=1` there (`_interpret`; unless the variable is already set),
before triton is imported, since its own language functions are jitted then. Tensors are then CPU
tensors. The package itself imports neither torch nor triton: the grader reads its
catalogue (an entry point) before torch is imported.
"""

from __future__ import annotations

import os


def interpreted() -> bool:
    """Do kernels run under Triton's interpreter here (CPU tensors), not compiled?"""
    return os.environ.get("TRITON_INTERPRET") == "1"


LEDGER_FIELDS = (
    "grid",
    "tile",
    "pointer formula",
    "mask",
    "traffic",
    "occupancy limiter",
    "oracle",
    "benchmark method",
)

__all__ = ["LEDGER_FIELDS", "interpreted"]
