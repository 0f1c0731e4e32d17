"""Slow oracles and call guards the drill suites share (written once, used by every drill).

An oracle here is the simplest code that is obviously right: Python loops over rows,
heads and positions in float64, never the vectorised form a candidate writes. Guards
check behaviours a result alone cannot show: that a call left its inputs alone, or
never concatenated.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import Tensor

from gptlab_testkit.boundary import TensorState, tensor_state
from gptlab_testkit.judge import advisory, worker_facts
from gptlab_testkit.judge.watched_calls import CountedCalls as CountedCalls  # suites' name
from gptlab_testkit.judge.watched_calls import ForbiddenCalls
from gptlab_testkit.judge.watched_calls import LaunchedGrids as LaunchedGrids  # suites' name
from gptlab_testkit.tensors import test_device


def seeded(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """Standard-normal values from their own generator (no global RNG), on the test device."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype).to(test_device())


def loop_attention(q: Tensor, k: Tensor, v: Tensor, allowed: Tensor) -> Tensor:
    """softmax(q k^T / sqrt(D)) v, one query at a time, in float64.

    q [B, Hq, L, D]; k, v [B, Hkv, S, D] with query head h reading kv head
    h // (Hq // Hkv); allowed: bool, broadcastable to [B, Hq, L, S] (True = may attend).
    Returns float64 [B, Hq, L, D]; a query with no allowed key is an AssertionError.
    """
    B, Hq, L, D = q.shape
    Hkv, S = k.shape[1], k.shape[2]
    group = Hq // Hkv
    mask = torch.broadcast_to(allowed.bool(), (B, Hq, L, S)).tolist()
    qs, ks, vs = q.double().tolist(), k.double().tolist(), v.double().tolist()
    out = torch.zeros(B, Hq, L, D, dtype=torch.float64)
    for b in range(B):
        for h in range(Hq):
            kv = h // group
            for i in range(L):
                keys = [j for j in range(S) if mask[b][h][i][j]]
                assert keys, f"row {b}, head {h}, query {i}: no key may be attended"
                scores = [
                    sum(x * y for x, y in zip(qs[b][h][i], ks[b][kv][j], strict=True))
                    / math.sqrt(D)
                    for j in keys
                ]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                for d in range(D):
                    out[b, h, i, d] = (
                        sum(w * vs[b][kv][j][d] for w, j in zip(weights, keys, strict=True)) / total
                    )
    return out.to(q.device)


CONCATENATIONS = (torch.cat, torch.concat, torch.concatenate, torch.stack, torch.hstack,
                  torch.vstack, torch.dstack)  # fmt: skip


@contextlib.contextmanager
def forbidding(*functions: Callable[..., Any], what: str = "call") -> Iterator[None]:
    """Fail if any of these torch functions is called inside the block (e.g. CONCATENATIONS).
    In judge mode a worker reports the candidate's calls: the verdict is advisory."""
    mode = ForbiddenCalls(functions)
    answered = worker_facts.calls_answered()
    with mode:
        yield
    if worker_facts.calls_answered() != answered:
        advisory.consulted("forbidding")
    assert not mode.seen, f"{what}: called {', '.join(sorted(set(mode.seen)))}"


@contextlib.contextmanager
def inputs_untouched(**tensors: Tensor) -> Iterator[None]:
    """The named tensors keep their values, shapes, strides and storage through the block
    (also when it raises: a rejected call must not have written first)."""
    before: dict[str, TensorState] = {name: tensor_state(t) for name, t in tensors.items()}
    try:
        yield
    finally:
        for name, tensor in tensors.items():
            assert tensor_state(tensor) == before[name], f"{name} was written by the call"


__all__ = [
    "CONCATENATIONS",
    "CountedCalls",
    "LaunchedGrids",
    "forbidding",
    "inputs_untouched",
    "loop_attention",
    "seeded",
]


# ---- sampling drills (P11, PT28): generators and drawn token ids ----


def seeded_generator(seed: int) -> torch.Generator:
    """A fresh torch.Generator on the test device, seeded: the caller-owned RNG a sampler uses."""
    return torch.Generator(device=test_device()).manual_seed(seed)


def drawn_tokens(result: Tensor, batch: int) -> list[int]:
    """A sampler's token ids as a list of `batch` ints; it may return them as [B] or [B, 1]."""
    assert isinstance(result, Tensor), f"token ids must be a tensor, got {type(result).__name__}"
    assert tuple(result.shape) in ((batch,), (batch, 1)), (
        f"token ids must have shape [{batch}] or [{batch}, 1], got {tuple(result.shape)}"
    )
    assert not result.is_floating_point(), f"token ids must be integers, got {result.dtype}"
    return [int(token) for token in result.flatten().tolist()]


SAMPLERS = (torch.multinomial, torch.Tensor.multinomial)  # what greedy decoding never calls

__all__ += ["SAMPLERS", "drawn_tokens", "seeded_generator"]


def supplied_test_outcomes(test_file: object, variable: str, module: str) -> dict[str, bool]:
    """Run a debug drill's supplied test file (its `test_*` functions, no fixtures) against
    `module` (a module name or a .py path, passed through `variable`): {test name: passed}.

    In-process and without pytest: the supplied file loads its module under test from
    `variable` when imported, so each call imports it afresh.
    """
    import importlib.util
    import os

    import pytest

    previous = os.environ.get(variable)
    os.environ[variable] = module
    try:
        name = f"supplied_{variable.lower()}"
        spec = importlib.util.spec_from_file_location(name, str(test_file))
        assert spec is not None and spec.loader is not None, f"cannot load {test_file}"
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
    finally:
        if previous is None:
            del os.environ[variable]
        else:
            os.environ[variable] = previous
    outcome: dict[str, bool] = {}
    for name in sorted(n for n in vars(loaded) if n.startswith("test_")):
        try:
            getattr(loaded, name)()
            outcome[name] = True
        except (Exception, pytest.fail.Exception):  # a failed pytest.raises is no Exception
            outcome[name] = False
    return outcome


__all__ += ["supplied_test_outcomes"]


def assert_binds(function: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """`function`'s signature takes these arguments (a signature clause's check): a
    missing default or a renamed or keyword-only parameter fails as an assertion,
    not as a TypeError from the call."""
    import inspect

    try:
        inspect.signature(function).bind(*args, **kwargs)
    except TypeError as error:
        # where the judge could not read the signature in the source, it is the worker's word
        worker_said = "signature" in advisory.facts_consulted()
        said = f" {advisory.WORKER_REPORTED}" if worker_said else ""
        message = f"{function.__name__} does not take this call: {error}{said}"
        raise AssertionError(message) from error


__all__ += ["assert_binds"]
