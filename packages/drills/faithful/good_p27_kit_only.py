"""A stranger's P27 from the kit's words alone: a backend wrapper that counts the graphs it
is handed, eager outputs compared call by call, steady calls timed after the warm-up; no
validation (the kit names none)."""

import time

import torch

VARIABLE = "DRILL_P27_MODULE"


def _as_args(call):
    return call if isinstance(call, tuple) else (call,)


def _same(got, want, atol, rtol):
    return (
        got.shape == want.shape
        and got.dtype == want.dtype
        and torch.allclose(got, want, atol=atol, rtol=rtol)
    )


def compile_guard_probe(fn, inputs, *, dynamic=False, backend="inductor", atol=1e-5, rtol=1e-5):
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        if callable(backend):
            return backend(gm, example_inputs)
        return torch._dynamo.lookup_backend(backend)(gm, example_inputs)

    torch._dynamo.reset()
    compiled_fn = torch.compile(fn, backend=counting, dynamic=dynamic)
    matches, compiled, steady = [], [], []
    for call in inputs:
        args = _as_args(call)
        before = len(graphs)
        started = time.perf_counter()
        got = compiled_fn(*args)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - started
        compiled.append(len(graphs) > before)
        if not compiled[-1]:
            steady.append(elapsed)
        matches.append(_same(got, fn(*args), atol, rtol))
    return {
        "matches": matches,
        "compiled": compiled,
        "compilations": len(graphs),
        "steady_seconds": sum(steady) / len(steady) if steady else None,
    }
