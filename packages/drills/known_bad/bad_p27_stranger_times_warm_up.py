"""A stranger times every compiled call, the compiling ones included: the "steady" mean is
mostly compiler time."""

import time

import torch
import torch._dynamo

VARIABLE = "DRILL_P27_MODULE"
EXPECTED_OWNER = "p27"


def compile_guard_probe(fn, inputs, *, dynamic=False, backend="inductor", atol=1e-5, rtol=1e-5):
    if not callable(fn):
        raise TypeError("fn must be callable")
    if not inputs:
        raise ValueError("inputs must not be empty")
    calls = [(c,) if isinstance(c, torch.Tensor) else tuple(c) for c in inputs]
    if not all(isinstance(a, torch.Tensor) for c in calls for a in c):
        raise ValueError("inputs must hold tensors")
    torch._dynamo.reset()
    real = torch._dynamo.lookup_backend(backend) if isinstance(backend, str) else backend
    frames = []

    def counted(gm, example_inputs):
        frames.append(gm)
        return real(gm, example_inputs)

    compiled = torch.compile(fn, backend=counted, dynamic=dynamic)
    matches, flags, times = [], [], []
    for args in calls:
        seen = len(frames)
        t0 = time.perf_counter()
        out = compiled(*args)
        times.append(time.perf_counter() - t0)
        flags.append(len(frames) > seen)
        matches.append(torch.allclose(out, fn(*args), atol=atol, rtol=rtol))
    return {
        "matches": matches,
        "compiled": flags,
        "compilations": len(frames),
        "steady_seconds": sum(times) / len(times),
    }
