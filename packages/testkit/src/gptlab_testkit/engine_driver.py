"""Step a scheduler engine (the scheduler contract's ``Engine``) and keep what it did.

Shared by the scheduler suite and the integration slice: requests are added with
an empty output list, every ``step()`` record is kept, and each emitted token is
appended to its request's output. Every loop is bounded, so a candidate that
livelocks fails the test instead of hanging it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any


class EngineDriver:
    """A candidate engine, stepped with every step's record and every request's output kept."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.records: list[Any] = []
        self.outputs: dict[Hashable, list[int]] = {}

    def add(self, rid: Hashable, prompt: Any, max_new_tokens: int, **kwargs: Any) -> None:
        self.engine.add_request(rid, prompt, max_new_tokens, **kwargs)
        self.outputs[rid] = []

    def step(self) -> Any:
        record = self.engine.step()
        self.records.append(record)
        for rid, token in dict(record.emitted).items():
            self.outputs[rid].append(int(token))
        return record

    def until(self, done: Callable[[EngineDriver], bool], max_steps: int = 400) -> None:
        """Step until ``done(driver)`` holds (bounded)."""
        for _ in range(max_steps):
            if done(self):
                return
            self.step()
        raise AssertionError(f"condition not reached after {max_steps} steps")

    def run(self, max_steps: int = 400) -> None:
        """Step until nothing is unfinished (a bound turns a livelock into a failure)."""
        for _ in range(max_steps):
            if not self.engine.has_unfinished_requests():
                return
            self.step()
        raise AssertionError(f"requests still unfinished after {max_steps} steps")


__all__ = ["EngineDriver"]
