"""The Triton launches a call makes under Triton's interpreter: which kernel, what grid.

A kernel's ledger states its launch grid; the launcher computes the grid it really uses.
While `recording()` is open every interpreted launch is written down as the kernel's name,
the grid it ran over (three numbers, as the interpreter pads it) and the launch's integer
arguments by their parameter names (`n`, `BLOCK`, ...), so a stated grid written in the
launcher's own names can be evaluated. Compiled launches (a GPU) are not seen here.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import Any

Launch = dict[str, Any]  # {"kernel": str, "grid": [x, y, z], "ints": {name: int}}


def _interpreter() -> Any:
    """Triton's interpreter module, or None where triton is not importable."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return None
    return interpreter


def _integers(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, int]:
    """The launch's integer arguments by parameter name (constexprs included)."""
    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return {}
    return {
        name: int(value)
        for name, value in bound.items()
        if isinstance(value, int) and not isinstance(value, bool)
    }


def _grid(grid: Any, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[int]:
    if callable(grid):  # a grid function of the launch's meta-parameters
        try:
            grid = grid(inspect.signature(fn).bind_partial(*args, **kwargs).arguments)
        except Exception:  # the launch itself reports what is wrong with it
            return []
    cells = [int(axis) for axis in tuple(grid)]
    return cells + [1] * (3 - len(cells))


@contextlib.contextmanager
def recording() -> Iterator[list[Launch]]:
    """Record every interpreted Triton launch made inside the block."""
    launches: list[Launch] = []
    interpreter = _interpreter()
    if interpreter is None:
        yield launches
        return
    executor = interpreter.GridExecutor
    original = executor.__call__

    def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        fn = getattr(self, "fn", None)
        launches.append(
            {
                "kernel": str(getattr(fn, "__name__", "?")),
                "grid": _grid(self.grid, fn, args, kwargs),
                "ints": _integers(fn, args, kwargs),
            }
        )
        return original(self, *args, **kwargs)

    executor.__call__ = watched
    try:
        yield launches
    finally:
        executor.__call__ = original


__all__ = ["Launch", "recording"]
