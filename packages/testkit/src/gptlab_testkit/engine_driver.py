"""Step a scheduler engine (the scheduler contract's ``Engine``) and keep what it did.

Shared by the scheduler suite and the integration slice: requests are added with
an empty output list, every ``step()`` record is kept, and each emitted token is
appended to its request's output. Every loop is bounded, so a candidate that
livelocks fails the test instead of hanging it: when no request emits for longer
than the unfinished work can explain (`stall_bound`), the test fails at once with
the stuck requests and the pool ("no progress in 80 steps: request r2 waiting, ...").
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
        self.work: dict[Hashable, int] = {}  # unfinished request -> prompt + output tokens
        self.quiet_steps = 0  # steps since a request last emitted

    def add(self, rid: Hashable, prompt: Any, max_new_tokens: int, **kwargs: Any) -> None:
        self.engine.add_request(rid, prompt, max_new_tokens, **kwargs)
        self.outputs[rid] = []
        length = prompt.numel() if hasattr(prompt, "numel") else len(prompt)
        self.work[rid] = int(length) + int(max_new_tokens)

    def step(self) -> Any:
        record = self.engine.step()
        self.records.append(record)
        emitted = dict(record.emitted)
        for rid, token in emitted.items():
            self.outputs[rid].append(int(token))
        for rid in record.finished:
            self.work.pop(rid, None)
        self.quiet_steps = 0 if emitted else self.quiet_steps + 1
        return record

    def stall_bound(self) -> int:
        """Steps without an emission that the unfinished work can explain, generously.

        Every step computes at least one token; a request's next emission needs at most its
        prompt + output recomputed, each request may be recomputed a few times (preemption).
        """
        return 16 + 3 * sum(self.work.values())

    def stall_report(self) -> str:
        """The unfinished requests and the pool, as the contract names them."""
        parts = []
        for rid in self.work:
            try:
                status = self.engine.status(rid)
            except Exception as error:  # the report must not hide the stall behind another error
                status = f"status raised {type(error).__name__}"
            parts.append(f"request {rid} {status} ({len(self.outputs.get(rid, []))} emitted)")
        try:
            s = self.engine.stats
            pool = (
                f"{s.free_blocks} free blocks, {s.cached_blocks} cached, {s.used_blocks} used, "
                f"{s.preemptions} preemptions"
            )
        except Exception as error:
            pool = f"stats raised {type(error).__name__}"
        return (
            f"no progress in {self.quiet_steps} steps: {', '.join(parts) or 'no request'}; {pool}"
        )

    def assert_progress(self) -> None:
        assert self.quiet_steps <= self.stall_bound(), self.stall_report()

    def until(self, done: Callable[[EngineDriver], bool], max_steps: int = 400) -> None:
        """Step until ``done(driver)`` holds (bounded)."""
        for _ in range(max_steps):
            if done(self):
                return
            self.step()
            self.assert_progress()
        raise AssertionError(f"condition not reached after {max_steps} steps")

    def run(self, max_steps: int = 400) -> None:
        """Step until nothing is unfinished (a bound turns a livelock into a failure)."""
        for _ in range(max_steps):
            if not self.engine.has_unfinished_requests():
                return
            self.step()
            self.assert_progress()
        raise AssertionError(
            f"requests still unfinished after {max_steps} steps ({self.stall_report()})"
        )


__all__ = ["EngineDriver"]
