"""Step a scheduler engine (the scheduler contract's ``Engine``) and keep what it did.

Shared by the scheduler suite and the integration slice: requests are added with
an empty output list, every ``step()`` record is kept, and each emitted token is
appended to its request's output. Every loop is bounded, so a candidate that
livelocks fails the test instead of hanging it: when no request emits for longer
than the unfinished work can explain (`stall_bound`), the test fails at once with
the stuck requests and the pool ("no progress in 80 steps: request r2 waiting, ...").
"""

from __future__ import annotations

import contextlib
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


class StalledError(AssertionError):
    """An engine made no progress for longer than its unfinished work can explain."""


class StreamWatch:
    """Bounds an engine's own ``generate`` without reading anything the contract hides.

    While open it counts the engine's steps (when ``generate`` steps through ``step``,
    the contract's name, wrapped as an instance attribute) and the model's calls (a
    forward, or a ``run_blocks`` outside one); a streamed item is progress. More ticks
    in a row than ``16 + 3 * work`` (two per step: a step and its model call) raise
    StalledError inside the engine's loop, naming the unfinished prompts and the pool.
    """

    def __init__(self, engine: Any, model: Any, prompts: Any, budgets: Any) -> None:
        budgets = list(budgets) if isinstance(budgets, list | tuple) else [budgets] * len(prompts)
        self.engine, self.model = engine, model
        work = sum(len(p) + int(n) for p, n in zip(prompts, budgets, strict=False))
        self.bound = 2 * (16 + 3 * work)
        self.unfinished = set(range(len(prompts)))
        self.quiet = self._inside_forward = 0
        self._restore = {  # instance attributes this replaces (another wrapper's, say)
            (target, name): vars(target).get(name)
            for target, name in ((engine, "step"), (model, "run_blocks"))
        }
        self._step = engine.step
        engine.step = self._counted_step
        self._hooks = [
            model.register_forward_pre_hook(self._enter),
            model.register_forward_hook(self._leave),
        ]
        self._run_blocks = getattr(model, "run_blocks", None)
        if self._run_blocks is not None:
            model.run_blocks = self._counted_run_blocks

    def __enter__(self) -> StreamWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for hook in self._hooks:
            hook.remove()
        for (target, name), previous in self._restore.items():
            if previous is not None:
                setattr(target, name, previous)
            else:  # the class's own shows again (judged: removed in the worker)
                with contextlib.suppress(AttributeError):
                    delattr(target, name)

    def _counted_step(self) -> Any:
        self._tick()
        return self._step()

    def _enter(self, module: Any, args: Any) -> None:
        self._inside_forward += 1
        self._tick()

    def _leave(self, module: Any, args: Any, output: Any) -> None:
        self._inside_forward -= 1

    def _counted_run_blocks(self, *args: Any, **kwargs: Any) -> Any:
        if not self._inside_forward:
            self._tick()
        assert self._run_blocks is not None
        return self._run_blocks(*args, **kwargs)

    def _tick(self) -> None:
        self.quiet += 1
        if self.quiet > self.bound:
            prompts = ", ".join(f"prompt {i}" for i in sorted(self.unfinished))
            try:
                s = self.engine.stats
                pool = (
                    f"{s.free_blocks} free blocks, {s.cached_blocks} cached,"
                    f" {s.used_blocks} used, {s.preemptions} preemptions,"
                    f" {s.num_waiting} waiting, {s.num_running} running"
                )
            except Exception as error:
                pool = f"stats raised {type(error).__name__}"
            raise StalledError(
                f"no progress in {self.quiet // 2} steps: {prompts} unfinished; {pool}"
            )

    def seen(self, item: Any) -> Any:
        """Record a streamed item as progress; returns it."""
        self.quiet = 0
        if item.finished:
            self.unfinished.discard(int(item.index))
        return item


def collect_stream(
    engine: Any, model: Any, prompts: Any, max_new_tokens: Any, **kwargs: Any
) -> list[Any]:
    """``list(engine.generate(prompts, max_new_tokens, **kwargs))``, under a StreamWatch."""
    with StreamWatch(engine, model, prompts, max_new_tokens) as watch:
        return [watch.seen(item) for item in engine.generate(prompts, max_new_tokens, **kwargs)]


__all__ = ["EngineDriver", "StalledError", "StreamWatch", "collect_stream"]
