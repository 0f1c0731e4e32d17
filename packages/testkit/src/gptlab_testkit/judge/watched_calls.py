"""The torch-function modes a test holds open around a candidate's calls.

In-process they see the candidate's torch calls themselves. Under the judge the
candidate's calls are made in its worker: `client` finds these modes in effect, asks the
worker to watch the call the same way and adds what it reports (worker-reported: a test
that reads it is advisory). The suites use them through `oracles` (`forbidding`,
`CountedCalls`, `LaunchedGrids`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gptlab_worker import launches as triton_launches
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


_LAUNCH_WATCHERS: list[LaunchedGrids] = []


class LaunchedGrids:
    """The Triton launches made inside the block (`with LaunchedGrids() as seen`): in
    `seen.launches`, one {"kernel", "grid", "ints"} record a launch, in launch order (see
    `gptlab_worker.launches`). In judge mode the worker records its own launches and
    reports them (worker-reported: a test that reads them is advisory)."""

    def __init__(self) -> None:
        self.launches: list[triton_launches.Launch] = []
        self._recording: Any = None
        self._heard = False

    def __enter__(self) -> LaunchedGrids:
        self._recording = triton_launches.recording()
        self.launches = self._recording.__enter__()  # launches made in this process
        _LAUNCH_WATCHERS.append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _LAUNCH_WATCHERS.remove(self)
        self._recording.__exit__(*exc_info)
        if self._heard:
            advisory.consulted("LaunchedGrids")  # a worker reported the launches

    def heard(self, launches: list[triton_launches.Launch]) -> None:
        """Launches a worker reported making during a call made inside the block."""
        self._heard = True
        self.launches.extend(launches)


def launch_watchers() -> list[LaunchedGrids]:
    """The `LaunchedGrids` blocks open now (a call made now is watched by each)."""
    return list(_LAUNCH_WATCHERS)
