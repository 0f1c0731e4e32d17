"""Objects the judge lends a candidate: they stay in the judge, and the worker asks for them.

A test hands a candidate things that are not values: a reference model to drive, a
recorder that counts the calls made to it, a callable. Such an object never travels;
the worker gets a stand-in (`worker.JudgeObject`) whose attribute reads, calls, items,
length and iteration come here as a `callback` request in the middle of the candidate's
call. The answer goes back by value (a tensor as bytes) or as another lent object; a
tensor argument the judge's code wrote into is sent back after the call, so an in-place
contract holds across the boundary both ways. The judge's code may call the candidate's
own objects meanwhile (a reference model appending to the candidate's cache): those are
ordinary requests to the worker, which serves them while it waits.

What a candidate cannot do with a lent object: read a name that starts with "_" (no
`__class__`, `__globals__`, `__dict__`: the judge's internals stay out of reach), reach a
module, or call what would change a lent model's weights, dtype, device, mode or hooks
(a candidate that rewrote the reference model would move the oracle its own answer is
compared with). Those fail in the candidate's call as AttributeError, naming the reason;
`eval`, `train` and `to` are taken where they change nothing (a defensive
`model.eval()` on a model in eval mode).
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import types
from typing import Any, Protocol

import torch
from gptlab_worker import wire

from gptlab_testkit.judge import shipping


class Lender(Protocol):
    """What answering a callback needs of the judge's side of a worker (`judge.client.Worker`):
    the objects it lent, decoding what the worker sent, and references for what goes back."""

    owned: set[int]

    def lent_object(self, data: dict[str, Any]) -> Any: ...

    def decode(self, data: Any, blobs: list[bytes], *, returned: bool = True) -> Any: ...

    def reference_of(self, value: Any) -> dict[str, Any]: ...


MAX_ITEMS = 100_000  # what one iteration over a lent object may send back
MAX_LENT = 8192  # objects a worker holds references to; the least recently used go first
# nn.Module methods that change the module (weights, dtype, device, mode, hooks, children)
MODEL_CHANGING = frozenset(
    {
        "load_state_dict", "to", "cuda", "cpu", "half", "float", "double", "bfloat16",
        "type", "apply", "requires_grad_", "zero_grad", "train", "eval", "share_memory",
        "to_empty", "set_extra_state", "add_module", "register_module", "register_buffer",
        "register_parameter", "set_submodule", "compile", "ipu", "xpu", "mtia",
    }
)  # fmt: skip
ENTERING = ("__enter__", "__exit__")
UNCHANGED_ALLOWED = frozenset({"eval", "train", "to"})  # where the call changes nothing


# What a candidate may do to a module the test itself defines and hands it to be probed
# (P17 switches its train/eval mode and puts each submodule's flag back): the modes only.
# Weights, dtype, device and hooks stay out of reach there too.
MODE_SWITCHES = frozenset({"train", "eval"})


def test_owned(value: Any) -> bool:
    """A module whose class a test file defines, made of such modules and torch's own
    layers only (the probe's subject): not a reference model, nor a test's wrapper around
    one (a scheduler test's recorder), whose mode would move the oracle."""
    if not isinstance(value, torch.nn.Module) or not _of_a_test(type(value)):
        return False
    return all(
        _of_a_test(type(m)) or type(m).__module__.startswith("torch.") for m in value.modules()
    )


def _of_a_test(kind: type) -> bool:
    module = sys.modules.get(kind.__module__)
    return shipping.in_a_test_file(str(getattr(module, "__file__", "") or ""))


def attribute(owner: Any, name: Any, *, calling: bool = False, owned: bool = False) -> Any:
    """`owner.name`, for the candidate, within the limits above (`owned`: a module of the
    test's own, whose mode the candidate may switch)."""
    if not isinstance(name, str) or (name.startswith("_") and not (calling and name in ENTERING)):
        raise AttributeError(f"{name!r}: the grader's objects show only their public names")
    if owned and isinstance(owner, torch.nn.Module) and name in MODE_SWITCHES:
        return getattr(owner, name)
    if isinstance(owner, torch.nn.Module) and name in UNCHANGED_ALLOWED:
        return _Unchanging(owner, name)
    if name.startswith("register_") or (
        isinstance(owner, torch.nn.Module) and name in MODEL_CHANGING
    ):
        raise AttributeError(f"{name}: a model lent by the grader cannot be changed")
    return getattr(owner, name)


class _Unchanging:
    """`model.eval()`, `model.train(False)`, `model.to(its own device)`: allowed where they
    change nothing (a defensive call a faithful candidate may make), refused otherwise."""

    def __init__(self, model: torch.nn.Module, name: str) -> None:
        self._model, self._name = model, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self._changes(args, kwargs):
            return self._model
        raise AttributeError(f"{self._name}: a model lent by the grader cannot be changed")

    def _changes(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        model = self._model
        if self._name == "eval":
            return bool(args or kwargs) or model.training
        if self._name == "train":
            mode = args[0] if args else kwargs.get("mode", True)
            return (
                not isinstance(mode, bool)
                or len(args) + len(kwargs) > 1
                or any(m.training != mode for m in model.modules())
            )
        device, dtype, _, memory_format = torch._C._nn._parse_to(*args, **kwargs)
        tensors = [*model.parameters(), *model.buffers()]
        return memory_format is not None or any(
            (device is not None and t.device != device)
            or (dtype is not None and t.is_floating_point() and t.dtype != dtype)
            for t in tensors
        )


def check_lendable(value: Any) -> None:
    """A module or one of Python's builtins (`setattr`, `eval`, `open`: they would act in
    the judge) is never lent, wherever it turns up in a value sent to the worker."""
    if isinstance(value, types.ModuleType):
        raise TypeError("a module is out of the candidate's reach")
    if getattr(value, "__module__", None) == "builtins" and callable(value):
        raise TypeError(f"{getattr(value, '__name__', value)!r} is out of the candidate's reach")


def answer(worker: Lender, message: dict[str, Any], blobs: list[bytes]) -> tuple[Any, list[bytes]]:
    """The reply to one callback request: `{"cb": 1, "value": ..., "after": [...]}`, or
    `{"cb": 1, "raised": [type, text]}` when the judge's code raised."""
    out: list[bytes] = []
    try:
        target = worker.lent_object({"j": message.get("j")})
        args = worker.decode(message.get("args") or {"L": []}, blobs, returned=False)
        kwargs = worker.decode(message.get("kwargs") or {"D": []}, blobs, returned=False)
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise wire.WireError("malformed callback")
        owned = id(target) in worker.owned or test_owned(target)
        with _modes(message):
            do, name = str(message.get("do")), message.get("name")
            value = _perform(target, do, name, args, kwargs, owned=owned)
        if owned:  # what a test's own module gives (its submodules) is the test's too
            worker.owned.update(id(item) for item in _values_in(value))
        after = [_after(item, out) for item in [*args, *kwargs.values()]]
        reply = {"cb": 1, "value": wire.encode(value, out, worker.reference_of), "after": after}
        if owned and isinstance(value, torch.Tensor) and value.grad_fn is not None:
            reply["graph"] = worker.reference_of(value)["j"]  # a backward there reaches it
        return reply, out
    except wire.WireError:
        raise
    except Exception as error:  # the judge's code raised (a FloorContext's ValueError)
        return {"cb": 1, "raised": [type(error).__name__, str(error)[:2000]]}, []


def _perform(
    target: Any, do: str, name: Any, args: list[Any], kwargs: dict[str, Any], *, owned: bool
) -> Any:
    if do == "getattr":
        return attribute(target, name, owned=owned)
    if do == "setattr":  # only a test's own module's mode flag (P17 restores each one)
        if not (owned and name == "training" and len(args) == 1 and isinstance(args[0], bool)):
            raise AttributeError(f"{name!r}: the grader's objects cannot be changed")
        target.training = args[0]
        return None
    if do == "call":
        function = target if name is None else attribute(target, name, calling=True, owned=owned)
        return function(*args, **kwargs)
    if do == "backward" and isinstance(target, torch.Tensor) and len(args) == 1:
        # the worker's backward through what a test's own module returned it: on into the
        # module's parameters here, as in one process (P17.12: no .grad may be left)
        torch.autograd.backward(target, args[0])
        return None
    if do == "list":
        items = list(itertools.islice(iter(target), MAX_ITEMS + 1))
        if len(items) > MAX_ITEMS:
            raise ValueError(f"more than {MAX_ITEMS} items")
        return items
    if do == "next":
        return next(target)
    if do == "len":
        return len(target)
    if do == "bool":
        return bool(target)
    if do == "getitem" and len(args) == 1:
        return target[args[0]]
    raise wire.WireError(f"unknown callback {do!r}")


def _values_in(value: Any, depth: int = 0) -> list[Any]:
    """The modules and generators in `value`, in its lists and tuples too (`named_modules`
    gives (name, module) pairs): what is lent, and held while lent, so its id names it."""
    if isinstance(value, torch.nn.Module | types.GeneratorType):
        return [value]
    if depth < 3 and isinstance(value, list | tuple):
        return [found for item in value for found in _values_in(item, depth + 1)]
    return []


@contextlib.contextmanager
def _modes(message: dict[str, Any]) -> Any:
    """The judge's code runs under the candidate's grad and inference modes at the call."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.set_grad_enabled(message.get("grad", True) is True))
        if message.get("inference") is True:
            stack.enter_context(torch.inference_mode())
        yield


def _after(value: Any, out: list[bytes], depth: int = 0) -> Any:
    """A tensor or generator argument as the judge's code left it (the worker writes it
    into its own), at any depth of lists, tuples and dicts; None for anything else."""
    if isinstance(value, torch.Tensor | torch.Generator):
        return wire.encode(value, out)
    if depth < 8 and isinstance(value, list | tuple | dict):
        items = value.values() if isinstance(value, dict) else value
        return {"L": [_after(item, out, depth + 1) for item in items]}
    return None
