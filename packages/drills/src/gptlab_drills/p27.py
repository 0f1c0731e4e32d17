"""P27 compile-guard probe: what torch.compile did, call by call, for one pure function.

torch.compile traces `fn` on its first call and guards the graph on what it assumed (shapes,
dtypes, devices). A call that passes the guards reuses the graph; one that fails them
compiles again. `dynamic` states the shape contract: False specialises on every shape (one
compilation per new shape), True compiles shape-generic graphs (sizes 0 and 1 are still
specialised), None is torch's default (static first, generic after a shape changes).

The probe counts compilations through its own backend wrapper, compares every compiled
output with eager, and times only the calls that compiled nothing (warm-up excluded).

Shapes: `inputs` is a sequence of calls, each a Tensor or a tuple of Tensors (`fn`'s
arguments); `fn` returns one Tensor.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

Call = Tensor | tuple[Tensor, ...]


def compile_guard_probe(
    fn: Callable[..., Tensor],
    inputs: Sequence[Call],
    *,
    dynamic: bool | None = False,
    backend: str | Callable[..., Any] = "inductor",
    atol: float = 1e-5,
    rtol: float = 1e-5,
) -> dict[str, Any]:
    """-> {"matches": [bool per call], "compiled": [bool per call], "compilations": int,
    "steady_seconds": mean wall time of the calls that compiled nothing, or None}."""
    calls = _check(fn, inputs, dynamic, backend, atol, rtol)
    import torch._dynamo  # lazily: importing dynamo costs seconds

    torch._dynamo.reset()  # a clean cache: compilations are this probe's own
    inner = torch._dynamo.lookup_backend(backend) if isinstance(backend, str) else backend
    count = 0

    def counting(graph: torch.fx.GraphModule, example_inputs: list[Tensor]) -> Any:
        nonlocal count
        count += 1
        return inner(graph, example_inputs)

    compiled_fn = torch.compile(fn, backend=counting, dynamic=dynamic)
    matches, compiled, steady = [], [], []
    for args in calls:
        expected = fn(*args)
        before = count
        start = time.perf_counter()
        got = compiled_fn(*args)
        _synchronize(got)
        elapsed = time.perf_counter() - start
        compiled.append(count > before)
        if count == before:
            steady.append(elapsed)  # a compiling call times the compiler, not the function
        same = got.shape == expected.shape and got.dtype == expected.dtype
        matches.append(same and torch.allclose(got, expected, atol=atol, rtol=rtol))
    return {
        "matches": matches,
        "compiled": compiled,
        "compilations": count,
        "steady_seconds": sum(steady) / len(steady) if steady else None,
    }


def _synchronize(output: Tensor) -> None:
    if output.device.type == "cuda":
        torch.cuda.synchronize(output.device)  # kernels are async: time their completion


def _check(
    fn: object, inputs: object, dynamic: object, backend: object, atol: object, rtol: object
) -> list[tuple[Tensor, ...]]:
    """Every call as a tuple of arguments; ValueError naming what is wrong, before any call."""
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    if not isinstance(inputs, list | tuple) or not inputs:
        raise ValueError("inputs must be a non-empty list or tuple of calls")
    calls = []
    for index, call in enumerate(inputs):
        args = (call,) if isinstance(call, Tensor) else call
        if not isinstance(args, list | tuple) or not all(isinstance(a, Tensor) for a in args):
            raise ValueError(f"inputs[{index}] must be a Tensor or a tuple of Tensors")
        if any(a.is_meta for a in args):  # no values to compare
            raise ValueError(f"inputs[{index}] holds a meta tensor")
        calls.append(tuple(args))
    if dynamic is not None and not isinstance(dynamic, bool):  # 1 == True, but is no bool
        raise ValueError(f"dynamic must be True, False or None, got {dynamic!r}")
    if not (isinstance(backend, str) or callable(backend)):
        raise ValueError(f"backend must be a name or a callable, got {type(backend).__name__}")
    for name, tol in (("atol", atol), ("rtol", rtol)):
        if isinstance(tol, bool) or not isinstance(tol, int | float) or not 0 <= tol < math.inf:
            raise ValueError(f"{name} must be a finite number >= 0, got {tol!r}")
    return calls


__all__ = ["compile_guard_probe"]
