"""Functions of a test that run where the candidate calls them: sent as source, not lent.

A function the test hands a candidate is normally lent (`lending`): it stays in the judge
and every call comes back as a callback. That cannot work where the candidate must see
the function's code itself: `torch.compile` in the worker traces the bytecode of what it
is given (P27's probe), and a lent stand-in has none worth tracing. So a *pure* function
of a test file travels as its source and is defined again in the worker (`gptlab_worker`,
`Server.shipped`), once per function object (the same function handed over twice is one
function there, so a compile cache sees it as in one process).

Pure means: written with `def` in a test file (`test_*.py`, `conftest.py`), no decorator,
no closure, no defaults, and every global it reads is a module in `SHIPPED_MODULES`. Such a
function carries nothing of the judge: no state, no oracle, no reference. Anything else is
lent as before. The direction is one way: the judge sends source to the worker; nothing the
worker sends is ever run here (`wire.decode` hands `{"src"}` only to the worker's side).
"""

from __future__ import annotations

import builtins
import dis
import inspect
import textwrap
import types
from pathlib import Path
from typing import Any

SHIPPED_MODULES = frozenset({"torch", "math"})  # what a shipped function may name
MAX_SOURCE = 20_000  # characters: a test's helper, not a module


def in_a_test_file(filename: str) -> bool:
    """A test file's path (`test_*.py`, `conftest.py`): where a test defines what it hands
    a candidate (here a function; in `lending.test_owned` a module's class)."""
    name = Path(filename).name
    return name.startswith("test_") or name == "conftest.py"


def as_source(value: Any) -> list[Any] | None:
    """`value` as [identity, source, name, {global name: module}] when it is a pure test
    function (see above), else None (it is lent)."""
    if not isinstance(value, types.FunctionType) or not in_a_test_file(value.__code__.co_filename):
        return None
    if value.__code__.co_freevars or value.__defaults__ or value.__kwdefaults__:
        return None
    modules: dict[str, str] = {}
    for name in _globals_read(value.__code__):
        target = value.__globals__.get(name)
        if isinstance(target, types.ModuleType) and target.__name__ in SHIPPED_MODULES:
            modules[name] = target.__name__
        elif name in value.__globals__ or not hasattr(builtins, name):
            return None  # the test's own state or helpers: lend it
    try:
        source = textwrap.dedent(inspect.getsource(value))
    except (OSError, TypeError):
        return None
    if not source.startswith(f"def {value.__name__}(") or len(source) > MAX_SOURCE:
        return None  # decorated, a lambda, or not what it seems
    return [id(value), source, value.__name__, modules]


def _globals_read(code: types.CodeType) -> set[str]:
    """Every global name the function's code (and the code nested in it) reads."""
    names = {ins.argval for ins in dis.get_instructions(code) if ins.opname == "LOAD_GLOBAL"}
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _globals_read(constant)
    return {str(name) for name in names}
