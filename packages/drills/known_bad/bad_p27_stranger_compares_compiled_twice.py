"""A stranger checks "compiled equals eager" by running the compiled function twice and
comparing the two results: a backend that changes every result goes unnoticed."""

import time
from dataclasses import dataclass

import torch
import torch._dynamo
from torch._dynamo.testing import CompileCounterWithBackend

VARIABLE = "DRILL_P27_MODULE"
EXPECTED_OWNER = "p27"


@dataclass
class Report:
    matches: list
    compiled: list
    compilations: int
    steady_seconds: float | None


def compile_guard_probe(fn, inputs, *, dynamic=False, backend="inductor", atol=1e-5, rtol=1e-5):
    if not callable(fn):
        raise ValueError("fn is not callable")
    if not isinstance(inputs, (list, tuple)) or len(inputs) == 0:
        raise ValueError("inputs: need at least one call")
    calls = []
    for c in inputs:
        c = (c,) if torch.is_tensor(c) else c
        if not isinstance(c, (list, tuple)) or not all(torch.is_tensor(a) for a in c):
            raise ValueError("inputs: every call must be tensors")
        calls.append(tuple(c))
    torch._dynamo.reset()
    counter = CompileCounterWithBackend(backend)
    compiled_fn = torch.compile(fn, backend=counter, dynamic=dynamic)
    report = Report([], [], 0, None)
    steady = []
    for args in calls:
        before = counter.frame_count
        start = time.perf_counter()
        first = compiled_fn(*args)
        took = time.perf_counter() - start
        report.compiled.append(counter.frame_count > before)
        if counter.frame_count == before:
            steady.append(took)
        again = compiled_fn(*args)
        report.matches.append(bool(torch.allclose(first, again, atol=atol, rtol=rtol)))
    report.compilations = counter.frame_count
    report.steady_seconds = sum(steady) / len(steady) if steady else None
    return report
