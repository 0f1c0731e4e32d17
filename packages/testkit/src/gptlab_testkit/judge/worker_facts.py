"""What only a candidate's worker can see of a tensor: identity, pointers, shared memory.

In judge mode (`gptlab_testkit.judge`) a tensor the candidate returns reaches the test
as a copy made in the judge, so `is`, `data_ptr()` and storage sharing of that copy say
nothing about the candidate's own objects. The worker reports those facts with every
tensor it sends (`wire`), the judge records them here, keyed by the copy's memory so
that a view the test takes of the copy keeps them. The helpers answer from the facts
where there are some and from the tensor itself otherwise: in-process (no judge) they
are plain `is`, `data_ptr()` and storage comparisons. A verdict decided from facts is
the worker's word, so its message says so: `worker_reported(...)`.

Every answer a helper gives from the worker's facts is noted (`advisory.consulted`): a
verdict resting on the candidate's word is shown as advisory, never scored (`scoring`).

A tensor the judge sent as an argument gets the facts of the worker's copy after the
call (did the candidate keep it?); a view of a returned tensor goes back to the worker
by reference (`reference`), the same memory there; `current` reads a view's values
as they are now in the worker.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from torch import Tensor, strided

from gptlab_testkit.judge import advisory

KEEP = 16384  # recorded copies, and at most KEEP_BYTES of them (the worker keeps as many
KEEP_BYTES = 256 * 1024 * 1024  # of its tensors alive: worker.Sent)
WORKER_REPORTED = " (worker-reported)"
# The copies checked for the test's writes and gradients before each call: the last
# WRITE_WINDOW recorded, and every copy of the last module walk (`parameters()`: its items
# come in one message, and a test may write each of them before its next call).
WRITE_WINDOW = 64
WALK_LIMIT = 4096
_RECENT: deque[list[Any]] = deque(maxlen=WRITE_WINDOW)  # [copy, returned, version seen]
_RECENT_GRAD: deque[Tensor] = deque(maxlen=WRITE_WINDOW)
_WALK: dict[str, list[Any]] = {"recent": [], "grad": []}  # the same, for the last walk
_WALKING = {"now": False}


def walking(now: bool) -> None:
    """True: the copies recorded until False come from a module's walk and replace the
    last walk's (`judge.client.Worker.decode`)."""
    _WALKING["now"] = now
    if now:
        _WALK["recent"], _WALK["grad"] = [], []


def _recently_recorded() -> list[list[Any]]:
    return [*_WALK["recent"], *_RECENT]


def _remember(window: deque[Any], walk: str, item: Any) -> None:
    """`item` into the recent `window`, and into the current walk's list while walking."""
    window.append(item)
    if _WALKING["now"] and len(_WALK[walk]) < WALK_LIMIT:
        _WALK[walk].append(item)


@dataclass(frozen=True, eq=False)
class Facts:
    """One worker tensor as the worker reported it, and the judge's copy of it."""

    serial: int  # names the worker's tensor object
    ptr: int
    base: int  # its storage's data pointer
    offset: int
    stride: tuple[int, ...]
    contiguous: bool
    worker: Any  # the judge.Worker that reported it, and its generation (a restart
    generation: int  # forgets every tensor)
    copy: Tensor  # the judge's copy
    version: int  # the copy's version counter when it arrived: later, a write of the test's
    returned: bool  # a returned value (True) or a judge argument's worker copy (False)
    moved: bool  # an argument's worker copy got other memory during the call (set_, resize_)


_BY_STORAGE: OrderedDict[int, Facts] = OrderedDict()  # a returned copy's storage -> facts
_BY_OBJECT: OrderedDict[int, Facts] = OrderedDict()  # an argument tensor's id -> facts
_HELD = {"bytes": 0}


def record(tensor: Tensor, reported: dict[str, Any], worker: Any, generation: int, *,
           returned: bool) -> None:  # fmt: skip
    """Keep the facts the worker reported of `tensor` (judge side; `judge` calls this)."""
    facts = of_report(reported, worker, generation, tensor, returned=returned)
    _keep(facts)
    if tensor.requires_grad:
        arrived_with_gradient(tensor)
        _remember(_RECENT_GRAD, "grad", tensor)


def of_report(reported: dict[str, Any], worker: Any, generation: int, copy: Tensor, *,
              returned: bool) -> Facts:  # fmt: skip
    """The facts the worker reported (checked by `wire`) of its tensor whose copy is `copy`."""
    return Facts(
        serial=int(reported.get("id", 0)),
        ptr=int(reported.get("ptr", 0)),
        base=int(reported.get("base", 0)),
        offset=int(reported.get("off", 0)),
        stride=tuple(int(s) for s in reported.get("stride", ())),
        contiguous=bool(reported.get("contig", 0)),
        worker=worker,
        generation=generation,
        copy=copy,
        version=_version(copy),
        returned=returned,
        moved=bool(reported.get("moved", 0)),
    )


def adopt(argument: Tensor, facts: Facts) -> None:
    """`argument` (the judge's) was sent by value: it gets the facts of the worker's copy."""
    _keep(replace(facts, copy=argument, version=_version(argument), returned=False))


# Where each tensor argument of a worker's last call lay there and lies here:
# id(worker) -> [(its copy's data pointer, storage start, storage end, ours)].
_PLACED: dict[int, list[tuple[int, int, int, int]]] = {}


_CALLS = {"answered": 0}  # worker calls answered in this process (judge mode only)


def new_call(worker: Any) -> None:
    """`worker` answered another call: what its earlier calls' copies were is forgotten."""
    _PLACED[id(worker)] = []
    _CALLS["answered"] += 1


def calls_answered() -> int:
    """How many calls a worker answered here so far: a guard (`oracles.forbidding`,
    `CountedCalls`) around which this grew heard the worker's count, not its own."""
    return _CALLS["answered"]


def placed(argument: Tensor, facts: Facts, span_bytes: int) -> None:
    """The worker's copy of `argument` (the judge's) lies at `facts`, `span_bytes` long
    from its storage's start: an address inside it has a place in `argument`'s memory."""
    if argument.device.type != "meta":
        entry = (facts.ptr, facts.base, facts.base + span_bytes, int(argument.data_ptr()))
        _PLACED.setdefault(id(facts.worker), []).append(entry)


def judge_address(address: Any) -> Any:
    """The judge's address for a data pointer a candidate reported (an int): where it
    falls in the worker's copy of a tensor argument of the last call, the same place in
    the judge's tensor (worker-reported: `worker_reported`). Anything else, and every
    value in-process, as it is."""
    if type(address) is not int:
        return address
    if any(_PLACED.values()):
        advisory.consulted("judge_address")  # a number the worker's candidate reported
    for entries in _PLACED.values():
        for ptr, start, end, ours in entries:
            if address == ptr or start <= address < end:
                return ours + (address - ptr)
    return address


def rebind(copy: Tensor, alias: Tensor) -> None:
    """`alias` (same memory) stands for the returned `copy` from now on: it has its facts."""
    found = facts_of(copy, arguments=False)
    if found is not None and found[0].copy is copy:
        _keep(replace(found[0], copy=alias, version=_version(alias)))


def written_by_worker(view: Tensor) -> None:
    """The judge mirrored the worker's write into a view it sent by reference: the copy
    still matches the worker's memory (not a write of the test's)."""
    found = facts_of(view, arguments=False)
    if found is not None:
        _keep(replace(found[0], version=_version(found[0].copy)))


def written_by_test(worker: Any) -> list[Facts]:
    """The tensors of `worker` whose copy here the test wrote into since it was recorded
    (among the recently recorded ones); recorded again as written, since
    the judge writes them through to the worker before its next call (`judge`)."""
    found: dict[int, Facts] = {}
    for entry in _recently_recorded():
        copy, returned, version = entry
        if _version(copy) == version:
            continue  # unwritten since recorded: the common case, decided cheaply
        table = _BY_STORAGE if returned else _BY_OBJECT
        facts = table.get(_storage_key(copy) if returned else id(copy))
        if facts is not None and facts.copy is copy and facts.worker is not worker:
            continue  # another worker's copy: its own next request carries the write
        entry[2] = _version(copy)
        if facts is None or facts.copy is not copy or id(copy) in found:
            continue
        if facts.generation != worker.generation:
            continue
        if _version(copy) != facts.version:
            found[id(copy)] = facts
    for facts in found.values():
        _keep(replace(facts, version=_version(facts.copy)))
    return list(found.values())


_GRADIENTS: dict[int, tuple[Tensor, Tensor | None]] = {}  # id(copy) -> (copy, .grad seen)


def arrived_with_gradient(copy: Tensor) -> None:
    """`copy` came from the worker with its .grad (a parameter's): not the test's to send."""
    grad = copy.grad
    _GRADIENTS[id(copy)] = (copy, None if grad is None else grad.detach().clone())
    if len(_GRADIENTS) > 2 * KEEP:  # only copies still recorded can be sent
        held = {id(facts.copy) for facts in _BY_STORAGE.values()}
        for key in [key for key in _GRADIENTS if key not in held]:
            del _GRADIENTS[key]


def gradients_by_test(worker: Any) -> list[tuple[int, Tensor]]:
    """What the test's backward added to the .grad of its copies of `worker`'s tensors
    (the recently recorded that require grad) since they arrived or since last
    asked: (serial, gradient) pairs."""
    found = []
    for copy in {id(copy): copy for copy in [*_WALK["grad"], *_RECENT_GRAD]}.values():
        if copy.grad is None or not copy.requires_grad:
            continue  # no backward reached it: the common case, decided cheaply
        facts = _BY_STORAGE.get(_storage_key(copy))
        if facts is None or facts.copy is not copy:
            continue
        if facts.worker is not worker or facts.generation != worker.generation:
            continue
        held, seen = _GRADIENTS.get(id(copy), (copy, None))
        seen = seen if held is copy else None
        added = copy.grad.detach() - seen if seen is not None else copy.grad.detach()
        if bool(added.ne(0).any()):
            found.append((facts.serial, added.clone()))
        _GRADIENTS[id(copy)] = (copy, copy.grad.detach().clone())
    return found


def _keep(facts: Facts) -> None:
    tensor = facts.copy
    if facts.version >= 0 and tensor.device.type != "meta":  # a write the test may make
        _remember(_RECENT, "recent", [tensor, facts.returned, facts.version])
    if facts.returned:
        table, key = _BY_STORAGE, _storage_key(tensor)
    else:
        table, key = _BY_OBJECT, id(tensor)
    old = table.pop(key, None)
    _HELD["bytes"] += _nbytes(tensor) - (0 if old is None else _nbytes(old.copy))
    table[key] = facts  # the copy is held: its memory cannot be reused while recorded
    while table and (len(table) > KEEP or _HELD["bytes"] > KEEP_BYTES):
        _, dropped = table.popitem(last=False)
        _HELD["bytes"] -= _nbytes(dropped.copy)


def _version(tensor: Tensor) -> int:
    """The tensor's in-place write counter (-1 for an inference tensor: it has none)."""
    try:
        return int(tensor._version)
    except RuntimeError:
        return -1


def _nbytes(tensor: Tensor) -> int:
    return 0 if tensor.device.type == "meta" else int(tensor.untyped_storage().nbytes())


def _storage_key(tensor: Tensor) -> int:
    return 0 if tensor.device.type == "meta" else int(tensor.untyped_storage().data_ptr())


def facts_of(tensor: Tensor, *, arguments: bool = True) -> tuple[Facts, int] | None:
    """The facts behind `tensor` and its element offset into the recorded copy, or None.
    `arguments=False`: only a returned tensor's (an argument's judge tensor keeps its own
    identity and pointers; only its storage is compared with the worker's copy's)."""
    if not (_BY_STORAGE or _BY_OBJECT) or not isinstance(tensor, Tensor):
        return None
    facts = _BY_OBJECT.get(id(tensor)) if arguments else None
    if facts is not None and facts.copy is tensor:
        return facts, 0
    if tensor.device.type == "meta":
        return None
    facts = _BY_STORAGE.get(_storage_key(tensor))
    if facts is None:
        return None
    return facts, int(tensor.storage_offset()) - int(facts.copy.storage_offset())


def serial_of(value: Any, worker: Any, *, arguments: bool = False) -> int | None:
    """The serial of `worker`'s tensor whose copy `value` is (a parameter it returned;
    `arguments`: or an argument the judge sent it), or None. Assigning the copy to a
    module of the worker's assigns that very tensor there."""
    found = facts_of(value, arguments=arguments) if isinstance(value, Tensor) else None
    if found is None or found[0].copy is not value or found[0].worker is not worker:
        return None
    return found[0].serial if found[0].generation == worker.generation else None


# A list or dict a worker's call returned: id(our copy) -> (copy, worker, generation, serial).
_OBJECTS: OrderedDict[int, tuple[Any, Any, int, int]] = OrderedDict()


def returned_object(value: Any, worker: Any, serial: int) -> None:
    """`value` (our copy) is the list or dict the worker names `serial` (`judge`)."""
    _OBJECTS[id(value)] = (value, worker, worker.generation, serial)
    _OBJECTS.move_to_end(id(value))
    while len(_OBJECTS) > KEEP:
        _OBJECTS.popitem(last=False)


def identity(value: Any) -> tuple[Any, ...]:
    """Equal for the same object: the worker's object where it reported one (a tensor, or
    a list or dict a call returned)."""
    found = _identity(value)
    if found[0] != "judge":
        advisory.consulted("identity")
    return found


def _identity(value: Any) -> tuple[Any, ...]:
    if isinstance(value, Tensor):
        found = facts_of(value, arguments=False)
        if found is not None and found[0].copy is value:
            return ("worker", id(found[0].worker), found[0].generation, found[0].serial)
    else:
        known = _OBJECTS.get(id(value))
        if known is not None and known[0] is value:
            return ("worker-object", id(known[1]), known[2], known[3])
    return ("judge", id(value))


def data_ptr(tensor: Tensor) -> tuple[Any, ...]:
    """Where the tensor's first element lives (the worker's address where it reported one)."""
    found = facts_of(tensor, arguments=False)
    if found is None:
        return ("judge", int(tensor.data_ptr()))
    advisory.consulted("data_ptr")
    facts, delta = found
    return ("worker", id(facts.worker), facts.ptr + delta * tensor.element_size())


def storage(tensor: Tensor) -> tuple[Any, ...]:
    """Which memory the tensor is a view of: equal for views of the same storage."""
    found = facts_of(tensor)
    if found is None:
        return ("judge", int(tensor.untyped_storage().data_ptr()))
    advisory.consulted("storage")
    return ("worker", id(found[0].worker), found[0].base)


def layout(tensor: Tensor) -> tuple[Any, ...]:
    """(data pointer, storage offset, strides): a tensor's place in memory, compared exactly."""
    found = facts_of(tensor, arguments=False)
    if found is None or tensor.device.type == "meta":
        return (int(tensor.data_ptr()), int(tensor.storage_offset()), tuple(tensor.stride()))
    facts, delta = found
    stride = facts.stride if facts.copy is tensor else tuple(tensor.stride())
    return (data_ptr(tensor), facts.offset + delta, stride)


def is_instance(value: Any, cls: type) -> bool:
    """isinstance(value, cls); for a candidate's object in a worker (a module the test
    built there), asked of the worker: worker-reported."""
    ask = getattr(type(value), "_isinstance", None)
    if ask is None:
        return isinstance(value, cls)
    advisory.consulted("isinstance")  # the worker's word on its own object's class
    return bool(ask(value, cls))


def same_objects(now: Any, before: Any) -> bool:
    """Are the tensors of `now` the very objects of `before`, in order?"""
    first, second = list(tensors_in(now)), list(tensors_in(before))
    return len(first) == len(second) and all(
        identity(a) == identity(b) for a, b in zip(first, second, strict=True)
    )


def worker_reported(*values: Any) -> str:
    """`" (worker-reported)"` when a fact about these values came from a worker, else `""`."""
    reported = any(facts_of(t) is not None for value in values for t in tensors_in(value))
    reported = reported or any(_identity(value)[0] == "worker-object" for value in values)
    return WORKER_REPORTED if reported else ""


def current(tensor: Tensor) -> Tensor:
    """The values of `tensor` as they are now: in judge mode a view of a returned tensor
    is read again from the worker's memory (an earlier copy would be stale)."""
    ref = reference(tensor)
    if ref is None:
        return tensor
    advisory.consulted("current")
    facts = facts_of(tensor, arguments=False)
    assert facts is not None
    value = facts[0].worker.read(ref)
    assert isinstance(value, Tensor)
    return value.to(tensor.device)


def reference(tensor: Tensor, worker: Any = None) -> list[Any] | None:
    """[serial, offset, shape, strides] naming, in the worker, the memory `tensor` views:
    a view of a returned tensor that the test has not written to. None otherwise."""
    found = facts_of(tensor, arguments=False)
    if found is None:
        return None
    facts, delta = found
    if not facts.returned or tuple(facts.copy.stride()) != facts.stride or delta < 0:
        return None  # the copy's layout is not the worker tensor's: no view maps across
    if worker is not None and facts.worker is not worker:
        return None
    if facts.worker.generation != facts.generation or _version(facts.copy) != facts.version:
        return None  # the worker was restarted, or the test wrote into its copy
    if tensor.dtype != facts.copy.dtype:
        return None
    return [facts.serial, delta, list(tensor.shape), list(tensor.stride())]


def tensors_in(value: Any, depth: int = 0) -> Iterator[Tensor]:
    """Every tensor with memory of its own (strided: not a sparse one) in nested lists,
    tuples and dict values."""
    if isinstance(value, Tensor):
        if value.layout == strided:
            yield value
    elif depth < 8 and isinstance(value, list | tuple):
        for item in value:
            yield from tensors_in(item, depth + 1)
    elif depth < 8 and isinstance(value, dict):
        for item in value.values():
            yield from tensors_in(item, depth + 1)


__all__ = [
    "current",
    "data_ptr",
    "identity",
    "is_instance",
    "judge_address",
    "same_objects",
    "storage",
    "worker_reported",
]
