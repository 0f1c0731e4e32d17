"""A rank of a Gloo group on loopback, and the record of the collectives its code enters.

One idea: where the candidate's code runs (a rank forked by a distributed suite, or the
candidate's worker under the judge), every collective of `torch.distributed` is wrapped to note its
name and the tensors it was given, and every async work handle it returns notes when it is
waited on. What the record shows: the order of a rank's collectives, their shapes and
dtypes, and the handles it returned without a wait (P28's rules no single result shows).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist

STORE_TIMEOUT_S = 5.0  # a rank whose peers never come to the rendezvous fails after this
# Module-level collectives a rank records (the torch 2.13 names included).
COLLECTIVES = (
    "all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "all_gather",
    "reduce_scatter", "all_gather_single", "reduce_scatter_single", "broadcast", "barrier",
    "all_to_all_single", "all_to_all", "reduce", "gather", "scatter", "send", "recv",
    "isend", "irecv", "_all_gather_base", "_reduce_scatter_base",
)  # fmt: skip


def tensors_of(args: Sequence[Any]) -> str:
    """The tensors among a call's arguments, as text: "float32 [4, 3], float32 [8, 3]"."""
    found: list[str] = []
    for arg in args:
        items = arg if isinstance(arg, list | tuple) else [arg]
        for item in items:
            if isinstance(item, torch.Tensor):
                found.append(f"{str(item.dtype).removeprefix('torch.')} {list(item.shape)}")
    return ", ".join(found)


class Waitable:
    """A work handle (or its future) that notes when it is waited on."""

    def __init__(self, inner: Any, on_wait: Callable[[], None]) -> None:
        self._inner, self._on_wait = inner, on_wait

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        self._on_wait()
        return self._inner.wait(*args, **kwargs)

    def value(self) -> Any:  # a future's result: available only once it completed
        self._on_wait()
        return self._inner.value()

    def synchronize(self) -> Any:
        self._on_wait()
        return self._inner.synchronize()

    def is_completed(self) -> bool:
        done = bool(self._inner.is_completed())
        if done:  # a poll that saw it finish is a wait
            self._on_wait()
        return done

    def get_future(self) -> Waitable:
        return Waitable(self._inner.get_future(), self._on_wait)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class Recorder:
    """A rank's record since the last `take`: the collectives entered, as (name, tensors)
    pairs, and the handles not yet waited on. `on_enter` hears each collective as it is
    entered (a rank that then hangs has said where)."""

    def __init__(self, on_enter: Callable[[str, str], None] | None = None) -> None:
        self.on_enter = on_enter
        self.calls: list[tuple[str, str]] = []
        self.pending: dict[int, str] = {}

    def take(self) -> tuple[list[tuple[str, str]], list[str]]:
        """The collectives entered and the handles left unwaited since the last take."""
        taken = (self.calls, sorted(self.pending.values()))
        self.calls, self.pending = [], {}
        return taken

    def wrap(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def call(*args: Any, **kwargs: Any) -> Any:
            entered = (name, tensors_of([*args, *kwargs.values()]))
            self.calls.append(entered)
            if self.on_enter is not None:
                self.on_enter(*entered)
            work = original(*args, **kwargs)
            if work is None:
                return None
            key = len(self.calls)
            self.pending[key] = f"{name} (collective #{key})"
            return Waitable(work, lambda: self._waited(key))

        return call

    def _waited(self, key: int) -> None:
        self.pending.pop(key, None)

    def install(self) -> None:
        """Wrap the collectives in torch.distributed and wherever a module imported them."""
        originals = {name: getattr(dist, name) for name in COLLECTIVES if hasattr(dist, name)}
        wrapped = {name: self.wrap(name, fn) for name, fn in originals.items()}
        by_identity = {id(fn): wrapped[name] for name, fn in originals.items()}
        for name, fn in wrapped.items():
            setattr(dist, name, fn)
        for module in list(sys.modules.values()):  # `from torch.distributed import all_reduce`
            if module is None or getattr(module, "__name__", "torch").startswith("torch"):
                continue
            with contextlib.suppress(Exception):
                for key, value in list(vars(module).items()):
                    if callable(value) and id(value) in by_identity:
                        setattr(module, key, by_identity[id(value)])


def join(
    rank: int, world: int, port: int, timeout_s: float,
    on_enter: Callable[[str, str], None] | None = None,
) -> Recorder:  # fmt: skip
    """Record this process's collectives from now on, then join rank `rank` of `world` in
    a Gloo group whose rendezvous is a TCP store on loopback at `port`. `timeout_s` is
    Gloo's own deadline: a collective whose peer never comes raises after it."""
    recorder = Recorder(on_enter)
    recorder.install()
    store = dist.TCPStore(  # type: ignore[attr-defined]
        "127.0.0.1", port, world, False, timeout=datetime.timedelta(seconds=STORE_TIMEOUT_S)
    )
    dist.init_process_group(
        "gloo", store=store, rank=rank, world_size=world,
        timeout=datetime.timedelta(seconds=timeout_s),
    )  # fmt: skip
    return recorder
