"""The torch-function modes a test holds open around a candidate's calls.

In-process they see the candidate's torch calls themselves. Under the judge the
candidate's calls are made in its worker: `client` finds these modes in effect, asks the
worker to watch the call the same way and adds what it reports (worker-reported: a test
that reads it is advisory). The suites use them through `oracles` (`forbidding`,
`CountedCalls`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gptlab_worker.wire import largest_tensor
from torch.overrides import TorchFunctionMode

from gptlab_testkit.judge import advisory, worker_facts


class ForbiddenCalls(TorchFunctionMode):
    """Records each call of a `forbidden` torch function made inside the block (`seen`)."""

    def __init__(self, forbidden: Iterable[Callable[..., Any]]) -> None:
        super().__init__()
        self.forbidden = set(forbidden)
        self.seen: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if func in self.forbidden:
            self.seen.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


class CountedCalls(TorchFunctionMode):
    """Counts the torch calls made inside the block (`with CountedCalls() as counter`) and
    the most elements one of them returned in a tensor (`largest`). In judge mode the
    candidate's calls are made in its worker, which counts them and reports both numbers
    (worker-reported: a test that reads them is advisory, `advisory`); the judge's own
    wire work is not counted (`paused`)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.largest = 0
        self.paused = 0
        self._answered = 0

    def __enter__(self) -> CountedCalls:
        self._answered = worker_facts.calls_answered()
        super().__enter__()  # type: ignore[no-untyped-call]
        return self

    def __exit__(self, *exc_info: object) -> None:
        super().__exit__(*exc_info)  # type: ignore[no-untyped-call]
        if worker_facts.calls_answered() != self._answered:
            advisory.consulted("CountedCalls")  # a worker counted the candidate's calls

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        result = func(*args, **(kwargs or {}))
        if not self.paused:
            self.calls += 1
            self.largest = max(self.largest, largest_tensor(result))
        return result
