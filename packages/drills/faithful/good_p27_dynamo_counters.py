"""A stranger's P27 from the README alone: torch._dynamo.testing's CompileCounterWithBackend
does the counting, eager runs after the compiled call, a dataclass holds the report."""

import time
from dataclasses import dataclass, field

import torch

VARIABLE = "DRILL_P27_MODULE"


@dataclass
class CompileReport:
    matches: list = field(default_factory=list)
    compiled: list = field(default_factory=list)
    compilations: int = 0
    steady_seconds: float | None = None


def compile_guard_probe(fn, inputs, *, dynamic=False, backend="inductor", atol=1e-5, rtol=1e-5):
    if not isinstance(inputs, (list, tuple)) or len(inputs) == 0:
        raise ValueError("inputs must list at least one call")
    normalized = [tuple(c) if isinstance(c, (list, tuple)) else (c,) for c in inputs]
    for i, args in enumerate(normalized):
        if not all(isinstance(a, torch.Tensor) for a in args):
            raise ValueError(f"inputs[{i}] holds something other than tensors")
    if not callable(fn):
        raise TypeError(f"fn must be callable, not {type(fn).__name__}")
    if dynamic not in (True, False, None):
        raise ValueError("dynamic must be True, False or None")
    from torch import _dynamo
    from torch._dynamo.testing import CompileCounterWithBackend

    _dynamo.reset()
    counter = CompileCounterWithBackend(backend)
    opt = torch.compile(fn, backend=counter, dynamic=dynamic)
    report, warm = CompileReport(), []
    for args in normalized:
        frames = counter.frame_count
        t0 = time.perf_counter()
        out = opt(*args)
        dt = time.perf_counter() - t0
        fresh = counter.frame_count != frames
        report.compiled.append(fresh)
        if not fresh:
            warm.append(dt)
        ref = fn(*args)
        report.matches.append(
            out.shape == ref.shape
            and out.dtype == ref.dtype
            and bool(torch.allclose(out, ref, atol=atol, rtol=rtol))
        )
    report.compilations = counter.frame_count
    report.steady_seconds = (sum(warm) / len(warm)) if warm else None
    return report
