"""What the judge and a candidate's worker say to each other: values, never code.

A message is an 8-byte length, a JSON header, then raw tensor bytes. Plain data travels
as JSON (lists, tuples, dicts, sets, None, bools, numbers, strings, dtypes, devices,
slices; any other object the judge sends, such as a test's `object()`, as its type's
name: the worker gets a stand-in of that name);
a tensor travels by value (dtype, shape, the contiguous bytes); a torch.Generator as its
state; an object that must stay in the worker (a module instance, a class) as a handle
id. A tensor from the worker may carry what only the worker can see of it (`facts`: its
object's serial, data pointers, offset and strides), and a tensor the judge sends back
may name the worker tensor it is a view of (`refs`: by reference, not by value).
Nothing is pickled: decoding builds only these types, so bytes from a candidate's
process can never run code in the judge. Every size is checked before anything is
allocated: the header's length, each tensor's dtype, shape and byte count.

This module imports only the standard library and torch: both sides import it, the
judge as `gptlab_worker.wire` and the worker from its copy in the sandbox.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import keyword
import os
import select
import time
from typing import Any

import torch

MAX_HEADER = 16 * 1024 * 1024  # bytes of JSON in one message
MAX_TENSOR_BYTES = 1 << 30  # one tensor
MAX_MESSAGE_BYTES = 2 << 30  # all tensors of one message
IOV_MAX = 1024  # buffers one writev may take (Linux's UIO_MAXIOV)
MAX_DIMS = 16
DTYPES = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64,
        torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64,
        torch.complex128,
    )
}  # fmt: skip

BUILTIN_TYPES: dict[str, type] = {
    kind.__name__: kind
    for kind in (int, float, complex, bool, str, bytes, list, tuple, dict, set, frozenset, object)
}


# The exceptions re-raised as themselves across the wire, either way (any other arrives
# as RuntimeError on the worker's side, RemoteError on the judge's).
ERRORS: dict[str, type[BaseException]] = {
    e.__name__: e
    for e in (ValueError, TypeError, RuntimeError, IndexError, KeyError, AttributeError,
              NotImplementedError, ZeroDivisionError, OverflowError, StopIteration,
              dataclasses.FrozenInstanceError)
}  # fmt: skip


# A called name's prefix meaning "the method of the object's class, bound to the object"
# (what the judge read as a method, even after the test assigns that name on the object).
CLASS_METHOD = "\0class:"


class WireError(Exception):
    """A message that breaks the format or its bounds (the sender is not trusted)."""


class WireTimeoutError(WireError):
    pass


class WireClosedError(WireError):
    pass


class Drained(list[Any]):
    """The items of an iterator, read at once by the sender (a module's `parameters()`):
    an iterator over them on the other side."""


class Handle:
    """An object living in the worker, named by its id there (and its type, for messages)."""

    def __init__(self, ident: int, kind: str) -> None:
        self.ident = ident
        self.kind = kind


# -- encoding (either side)


def encode(
    value: Any,
    blobs: list[bytes],
    handles: Any = None,
    facts: Any = None,
    refs: Any = None,
    generators: dict[int, int] | None = None,
) -> Any:
    """`value` as JSON-able data; tensor bytes appended to `blobs`. `handles(obj)` gives
    the reference of an object that cannot travel: on the worker's side a handle to an
    object of its own (`{"h": id}`) or a judge's object it was lent (`{"j": id}`); on the
    judge's side the worker's own object (`{"h"}`, `{"p": "name"}` for a module attribute),
    a stand-in (`{"o": type name}`) or an object lent to the worker (`{"j": id}`, whose
    attributes and calls come back to the judge). None: such a value is an error.
    `facts(tensor)` (worker side) adds what only the worker sees of a tensor; `refs(tensor)`
    (judge side) names the worker tensor it views, or None: then it travels by value.
    A generator met twice in one value is sent once, then by its index (`generators`), so a
    generator shared by two rows is one generator on the other side too."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, complex):
        return {"c": [value.real, value.imag]}
    if isinstance(value, torch.Tensor) and value.layout in SPARSE:
        return {"sp": _sparse(value, blobs)}
    if isinstance(value, torch.Tensor):
        ref = refs(value) if refs is not None else None
        if ref is not None:
            return {"tr": ref}
        spec, stride, offset = _tensor(value, blobs)
        extra: dict[str, Any] = {} if facts is None else {"facts": facts(value)}
        if stride is not None:
            extra["stride"] = stride
        if offset:
            extra["offset"] = offset
        if travels_whole(value) and value.numel():
            extra["whole"] = value.untyped_storage().nbytes() // value.element_size()
        if isinstance(value, torch.nn.Parameter):  # a module takes only a Parameter as one
            extra["param"] = 1
        if value.requires_grad:
            extra["grad"] = 1
            if value.is_leaf and value.grad is not None:  # a parameter's gradient goes with it
                extra["gv"] = encode(value.grad.detach(), blobs)["t"]
        elif value.is_inference():  # writable only under inference mode, on either side
            extra["inf"] = 1
        return {"t": [*spec, extra] if extra else spec}
    if isinstance(value, torch.Size):
        return {"T": list(value)}

    generators = {} if generators is None else generators

    def inner(item: Any) -> Any:
        return encode(item, blobs, handles, facts, refs, generators)

    if isinstance(value, tuple) and _named_fields(type(value)) is not None:
        fields = _named_fields(type(value))
        return {"NT": [type(value).__name__[:100], fields, [inner(v) for v in value]]}
    if isinstance(value, Drained):
        return {"I": [inner(v) for v in value]}
    if isinstance(value, tuple | list):
        return {"T" if isinstance(value, tuple) else "L": [inner(v) for v in value]}
    if isinstance(value, dict):
        return {"D": [[inner(k), inner(v)] for k, v in value.items()]}
    if isinstance(value, set | frozenset):
        return {"S" if isinstance(value, set) else "F": [inner(v) for v in value]}
    if isinstance(value, torch.dtype):
        return {"dt": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"dev": str(value)}
    if isinstance(value, slice):
        return {"sl": [inner(v) for v in (value.start, value.stop, value.step)]}
    if isinstance(value, torch.Generator):
        if id(value) in generators:
            return {"g": generators[id(value)]}
        generators[id(value)] = len(generators)
        return {"gen": _tensor(value.get_state(), blobs)[0], "device": str(value.device)}
    if isinstance(value, Handle):
        return {"h": value.ident, "kind": value.kind}
    if isinstance(value, type) and value in BUILTIN_TYPES.values():
        return {"ty": value.__name__}
    if handles is not None:
        return handles(value)
    raise TypeError(f"cannot send a {type(value).__name__} to the candidate's worker")


# A sparse tensor travels as the strided tensors it is made of (no memory facts: it has
# no storage of its own), and is built again with torch's checks of its invariants.
SPARSE = {torch.sparse_coo: "coo", torch.sparse_csr: "csr"}


def _sparse(tensor: torch.Tensor, blobs: list[bytes]) -> list[Any]:
    detached = tensor.detach()
    if detached.layout == torch.sparse_coo:
        parts = [detached._indices(), detached._values()]
        coalesced = bool(detached.is_coalesced())
    else:
        parts = [detached.crow_indices(), detached.col_indices(), detached.values()]
        coalesced = False
    specs = [_tensor(part.clone(memory_format=torch.contiguous_format), blobs)[0] for part in parts]
    return [SPARSE[detached.layout], specs, list(detached.shape), coalesced]


def _unsparse(data: Any, blobs: list[bytes]) -> torch.Tensor:
    parts = _list(data)
    if len(parts) != 4 or parts[0] not in SPARSE.values() or not isinstance(parts[3], bool):
        raise WireError("malformed sparse tensor")
    layout, specs, shape, coalesced = parts
    tensors = [_untensor_plain(spec, blobs) for spec in _list(specs)]
    shape = _ints(shape, "shape")
    try:
        if layout == "coo" and len(tensors) == 2:
            indices, values = tensors
            built = torch.sparse_coo_tensor(indices, values, shape, check_invariants=True)
            return built._coalesced_(coalesced) if coalesced else built
        if layout == "csr" and len(tensors) == 3:
            rows, columns, values = tensors
            return torch.sparse_csr_tensor(rows, columns, values, shape, check_invariants=True)
    except (RuntimeError, ValueError, TypeError) as error:
        raise WireError(f"malformed sparse tensor: {error}") from None
    raise WireError("malformed sparse tensor")


def _named_fields(kind: type) -> list[str] | None:
    """The fields of a named tuple type (a candidate's `Record(NamedTuple)`), else None."""
    fields = getattr(kind, "_fields", None)
    if isinstance(fields, tuple) and all(isinstance(f, str) for f in fields):
        return list(fields)
    return None


_NAMED: dict[tuple[str, tuple[str, ...]], type] = {}


def _named_tuple(data: Any, inner: Any) -> tuple[Any, ...]:
    """A named tuple of the sender's name and fields, built here: only identifiers."""
    parts = _list(data)
    if len(parts) != 3 or not isinstance(parts[0], str):
        raise WireError("malformed named tuple")
    name, fields, values = str(parts[0]), tuple(_list(parts[1])), _list(parts[2])
    valid = [f for f in (name, *fields) if isinstance(f, str) and f.isidentifier()]
    if len(valid) != len(fields) + 1 or len(fields) != len(values) or len(fields) > 256:
        raise WireError("malformed named tuple")
    if keyword.iskeyword(name) or any(keyword.iskeyword(f) or f.startswith("_") for f in fields):
        raise WireError("malformed named tuple")  # (a type's name may: `_IncompatibleKeys`)
    if (name, fields) not in _NAMED:
        _NAMED[(name, fields)] = collections.namedtuple(name, fields)
    return _NAMED[(name, fields)](*(inner(v) for v in values))  # type: ignore[no-any-return]


def _tensor(tensor: torch.Tensor, blobs: list[bytes]) -> tuple[list[Any], list[int] | None, int]:
    """The tensor's spec and, for a strided layout sent as is, its strides (else None) and
    its storage offset (the elements before its first travel too)."""
    if tensor.device.type == "meta":  # a meta tensor holds no data: its layout only
        blobs.append(b"")
        dtype = str(tensor.dtype).removeprefix("torch.")
        layout = [int(step) for step in tensor.stride()]
        return [len(blobs) - 1, dtype, list(tensor.shape), "meta"], layout, 0
    detached = tensor.detach()
    dtype = str(detached.dtype).removeprefix("torch.")
    if dtype not in DTYPES:
        raise TypeError(f"cannot send a {detached.dtype} tensor")
    stride, offset, elements = _sent_layout(detached, travels_whole(tensor))
    if stride is not None:
        flat = detached.as_strided((elements,), (1,), 0).to("cpu").clone()
    else:
        flat = detached.to("cpu").contiguous().reshape(-1)
    data = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
    blobs.append(data)
    return [len(blobs) - 1, dtype, list(detached.shape), str(tensor.device)], stride, offset


# A guarded buffer (a view inside a larger allocation whose guard regions a kernel must
# not touch) travels with its whole allocation, both ways, so that what a kernel reads or
# writes past the view lands in the same guard bytes on either side (`with_allocation`).
WHOLE_ALLOCATION = "_gptlab_whole_allocation"


def with_allocation(tensor: torch.Tensor) -> torch.Tensor:
    """Mark `tensor` (a CPU view) to travel with every byte of its storage, not only the
    elements its view spans: the judge's guard regions reach the worker and come back."""
    setattr(tensor, WHOLE_ALLOCATION, True)
    return tensor


def travels_whole(tensor: torch.Tensor) -> bool:
    return getattr(tensor, WHOLE_ALLOCATION, False) is True and tensor.device.type == "cpu"


def copy_allocation(original: torch.Tensor, value: torch.Tensor) -> bool:
    """Write the whole allocation `value` came back with into `original`'s (both guarded
    views with the same layout): True when done, False when either is not such a view."""
    if not (travels_whole(original) and travels_whole(value)):
        return False
    source, target = value.untyped_storage(), original.untyped_storage()
    same = source.nbytes() == target.nbytes() and value.stride() == original.stride()
    if not same or value.storage_offset() != original.storage_offset():
        return False
    target.copy_(source)
    return True


def _sent_layout(tensor: torch.Tensor, whole: bool = False) -> tuple[list[int] | None, int, int]:
    """How a strided tensor travels: its strides and storage offset where the layout
    travels as is (else None and 0: its elements, contiguous), and the elements sent (a
    guarded buffer's: its `whole` allocation)."""
    if whole and tensor.numel():
        elements = tensor.untyped_storage().nbytes() // tensor.element_size()
        return [int(step) for step in tensor.stride()], int(tensor.storage_offset()), elements
    offset = int(tensor.storage_offset()) if tensor.numel() else 0
    shape, stride = list(tensor.shape), list(tensor.stride())
    # torch calls a tensor contiguous whatever the strides of its size-one dims: those
    # strides are part of the layout a candidate may read, so they travel too
    if not offset and stride == _contiguous_strides(shape):
        return None, 0, tensor.numel()  # the common case: no span to measure
    span = _span(shape, stride)
    if offset + span <= 4 * tensor.numel() + 64:
        # The layout travels (an expanded tensor stays expanded, a transpose transposed, a
        # slice at its offset): the storage up to its last element, and its strides.
        return [int(step) for step in stride], offset, offset + span
    return None, 0, tensor.numel()


def sent_bytes(tensor: torch.Tensor) -> int:
    """The bytes of a CPU tensor's data as `encode` sends them (what the other side's copy
    of it holds in its storage)."""
    return _sent_layout(tensor.detach(), travels_whole(tensor))[2] * tensor.element_size()


def largest_tensor(result: Any) -> int:
    """The most elements of a tensor a torch call returned (alone or in a tuple or list):
    what `oracles.CountedCalls` records, in the judge's process and in the worker alike."""
    values = result if isinstance(result, tuple | list) else (result,)
    return max((v.numel() for v in values if isinstance(v, torch.Tensor)), default=0)


def _contiguous_strides(shape: list[int]) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return strides[::-1]


def _span(shape: list[int], stride: list[int]) -> int:
    """Elements from a strided tensor's first to its last (0 when it is empty)."""
    if 0 in shape:
        return 0
    return 1 + sum([(size - 1) * step for size, step in zip(shape, stride, strict=True)])


# -- decoding (either side): only the types above are ever built


def decode(
    data: Any,
    blobs: list[bytes],
    handle: Any = None,
    facts: Any = None,
    view: Any = None,
    generators: list[torch.Generator] | None = None,
    lent: Any = None,
) -> Any:
    """The value `data` describes. `facts(tensor, facts)` (judge side) receives what the
    worker reported of a tensor; `view(ref)` (worker side) resolves a tensor sent by
    reference; `lent(data)` resolves a `{"j": id}` or `{"p": name}` reference (see
    `encode`); without them such values are malformed. `generators`: those made so far."""
    if data is None or isinstance(data, bool | int | float | str):
        return data
    if not isinstance(data, dict) or len(data) not in (1, 2, 3):
        raise WireError("malformed value")

    generators = [] if generators is None else generators

    def inner(item: Any) -> Any:
        return decode(item, blobs, handle, facts, view, generators, lent)

    if "sp" in data:
        return _unsparse(data["sp"], blobs)
    if "t" in data:
        return _untensor(data["t"], blobs, facts)
    if "tr" in data:
        if view is None:
            raise WireError("unexpected tensor reference")
        return view(_reference(data["tr"]))
    if "T" in data:
        return tuple(inner(v) for v in _list(data["T"]))
    if "NT" in data:
        return _named_tuple(data["NT"], inner)
    if "S" in data or "F" in data:
        items = [inner(v) for v in _list(data.get("S", data.get("F")))]
        if any(not isinstance(item, bool | int | float | str | tuple | None) for item in items):
            raise WireError("malformed set")
        return set(items) if "S" in data else frozenset(items)
    if "ty" in data:
        if data["ty"] not in BUILTIN_TYPES:
            raise WireError("type not allowed")
        return BUILTIN_TYPES[data["ty"]]
    if "c" in data:
        parts = _list(data["c"])
        if len(parts) != 2 or any(not isinstance(p, int | float) for p in parts):
            raise WireError("malformed complex number")
        return complex(parts[0], parts[1])
    if "o" in data:
        if view is None:  # only the judge sends stand-ins
            raise WireError("unexpected stand-in")
        return type(str(data["o"])[:100], (), {})()
    if "L" in data:
        return [inner(v) for v in _list(data["L"])]
    if "I" in data:
        return iter([inner(v) for v in _list(data["I"])])
    if "D" in data:
        return {inner(k): inner(v) for k, v in _pairs(data["D"])}
    if "dt" in data:
        return _dtype(data["dt"])
    if "dev" in data:
        return torch.device(str(data["dev"]))
    if "sl" in data:
        return slice(*(inner(v) for v in _list(data["sl"])))
    if "gen" in data:
        generator = torch.Generator(device=str(data.get("device", "cpu")))
        generator.set_state(_untensor(data["gen"], blobs))
        generators.append(generator)
        return generator
    if "g" in data:  # a generator met earlier in the same value
        index = data["g"]
        if not isinstance(index, int) or not 0 <= index < len(generators):
            raise WireError("malformed generator reference")
        return generators[index]
    if "j" in data or "p" in data or "src" in data:  # "src": a test's function (`shipping`)
        if lent is None:
            raise WireError("unexpected lent object")
        return lent(data)
    if "h" in data:
        if handle is None:
            raise WireError("unexpected handle")
        # "cls": its type is the candidate module's attribute of that name (`kind`)
        return handle(int(data["h"]), str(data.get("kind", "object")), data.get("cls") == 1)
    raise WireError("unknown value kind")


def items(value: Any) -> list[Any]:
    """A list's items as sent (WireError for anything else)."""
    return _list(value)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise WireError("malformed list")
    return value


def _pairs(value: Any) -> list[tuple[Any, Any]]:
    if not isinstance(value, list) or any(not isinstance(p, list) or len(p) != 2 for p in value):
        raise WireError("malformed dict")
    return [(p[0], p[1]) for p in value]


def _dtype(name: Any) -> torch.dtype:
    if name not in DTYPES:
        raise WireError(f"dtype {name!r} not allowed")
    return DTYPES[name]


def _ints(value: Any, what: str) -> list[int]:
    # `type(v) is int`: no bool (JSON gives only these types; one pass, no generator)
    if type(value) is not list or len(value) > MAX_DIMS or not all(type(v) is int for v in value):
        raise WireError(f"malformed {what}")
    return value


def _reference(spec: Any) -> list[Any]:
    """[serial, storage offset, shape, strides] of a view of a tensor the worker sent."""
    if not isinstance(spec, list) or len(spec) != 4:
        raise WireError("malformed tensor reference")
    serial, offset, shape, stride = spec
    if not isinstance(serial, int) or not isinstance(offset, int) or offset < 0:  # serial < 0:
        # the -serial-th base of the same message (arguments sharing the judge's memory)
        raise WireError("malformed tensor reference")
    shape, stride = _ints(shape, "shape"), _ints(stride, "strides")
    if len(shape) != len(stride) or any(size < 0 for size in shape):
        raise WireError("malformed tensor reference")
    return [serial, offset, shape, stride]


def _facts(value: Any) -> dict[str, Any]:
    """What the worker reports of a tensor: ints and int lists under known keys, nothing else."""
    if not isinstance(value, dict) or not FACT_KEYS.issuperset(value):
        raise WireError("malformed tensor facts")
    for key, item in value.items():
        if key == "stride":
            _ints(item, "strides")
        elif not isinstance(item, int):
            raise WireError("malformed tensor facts")
    return value


FACT_KEYS = frozenset({"id", "ptr", "base", "off", "stride", "contig", "nbytes", "moved"})


# A tensor argument the call left as it was (its layout, memory and bytes): the worker
# answers with its facts and the byte count of the copy the judge would have received
# (`sent_bytes`), not with its bytes; the judge's tensor already holds those values.
def unchanged(facts: dict[str, Any], nbytes: int) -> dict[str, Any]:
    return {"u": facts, "n": nbytes}


def read_unchanged(data: Any) -> tuple[dict[str, Any], int] | None:
    """The facts and byte count of an `unchanged` answer; None for any other value."""
    if not isinstance(data, dict) or "u" not in data:
        return None
    nbytes = data.get("n")
    if set(data) != {"u", "n"} or type(nbytes) is not int or nbytes < 0:
        raise WireError("malformed unchanged argument")
    return _facts(data["u"]), nbytes


TENSOR_KEYS = frozenset({"facts", "stride", "grad", "inf", "offset", "gv", "param", "whole"})


def _untensor(spec: Any, blobs: list[bytes], facts: Any = None) -> torch.Tensor:
    """A tensor spec: [blob, dtype, shape, device] and, optionally, a dict of `facts` (what
    the worker reports), `stride` (the layout travelled as is), `grad` (requires grad),
    `gv` (its .grad), `param` (an nn.Parameter), `inf` (an inference tensor) and `offset`
    (its storage offset, with `stride`)."""
    if not isinstance(spec, list) or len(spec) not in (4, 5):
        raise WireError("malformed tensor")
    extra = spec[4] if len(spec) == 5 else {}
    if not isinstance(extra, dict) or not TENSOR_KEYS.issuperset(extra):
        raise WireError("malformed tensor")
    stride = _ints(extra["stride"], "strides") if "stride" in extra else None
    offset = extra.get("offset", 0)
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise WireError("malformed storage offset")
    if offset and stride is None:
        raise WireError("a storage offset without strides")
    whole = extra.get("whole")
    if whole is not None and (type(whole) is not int or whole < 0 or stride is None):
        raise WireError("malformed allocation size")
    tensor = _untensor_plain(spec[:4], blobs, stride, extra.get("inf") == 1, offset, whole)
    if whole is not None:
        with_allocation(tensor)
    if extra.get("param") == 1:
        grad = extra.get("grad") == 1 and tensor.is_floating_point()
        tensor = torch.nn.Parameter(tensor, requires_grad=grad)
    if extra.get("grad") == 1 and tensor.is_floating_point():
        tensor.requires_grad_(True)
        if "gv" in extra:
            grad = _untensor(extra["gv"], blobs)
            if grad.shape != tensor.shape or grad.dtype != tensor.dtype or grad.requires_grad:
                raise WireError("malformed gradient")
            tensor.grad = grad
    if facts is not None and "facts" in extra:
        facts(tensor, _facts(extra["facts"]))
    return tensor


def _untensor_plain(
    spec: list[Any],
    blobs: list[bytes],
    stride: list[int] | None = None,
    inference: bool = False,
    offset: int = 0,
    whole: int | None = None,
) -> torch.Tensor:
    index, name, shape, device = spec
    dtype = _dtype(name)
    if not isinstance(index, int) or not 0 <= index < len(blobs):
        raise WireError("tensor bytes missing")
    if not isinstance(shape, list) or len(shape) > MAX_DIMS:
        raise WireError("malformed shape")
    if any(not isinstance(size, int) or size < 0 for size in shape):
        raise WireError("malformed shape")
    numel = 1
    for size in shape:
        numel *= size
    data = blobs[index]
    if stride is not None and (len(stride) != len(shape) or any(step < 0 for step in stride)):
        raise WireError("malformed strides")
    if device == "meta" and not data:
        if stride is not None:
            return torch.empty_strided(shape, stride, dtype=dtype, device="meta")
        return torch.empty(shape, dtype=dtype, device="meta")
    elements = numel if stride is None or not numel else offset + _span(shape, stride)
    if whole is not None and numel:  # a guarded buffer: its whole allocation came
        if whole < elements:
            raise WireError("an allocation smaller than its view")
        elements = whole
    if elements * dtype.itemsize != len(data):
        raise WireError(f"tensor of shape {shape} ({name}) does not match its {len(data)} bytes")
    flat = (
        torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype)
        if numel
        else torch.empty(0, dtype=dtype)
    )
    if inference:  # an inference tensor's views are inference tensors: the layout is kept
        with torch.inference_mode():
            flat = flat.clone()
    if stride is None or not numel:
        tensor = flat.reshape(shape)
    else:
        tensor = flat.as_strided(shape, stride, offset)
    return tensor if str(device) == "cpu" else tensor.to(str(device))


# -- framing


def send(fd: int, message: dict[str, Any], blobs: list[bytes]) -> None:
    """One message in as few writes as the pipe allows: each write wakes the reader, so
    a header written apart from its tensors costs a wake-up (and a context switch) more."""
    header = json.dumps({"m": message, "b": [len(b) for b in blobs]}).encode()
    parts = [memoryview(part) for part in (len(header).to_bytes(8, "big"), header, *blobs)]
    parts = [part for part in parts if part.nbytes]
    while parts:
        written = os.writev(fd, parts[:IOV_MAX])
        while parts and written >= parts[0].nbytes:
            written -= parts[0].nbytes
            parts.pop(0)
        if parts and written:
            parts[0] = parts[0][written:]


def receive(fd: int, deadline: float | None = None) -> tuple[dict[str, Any], list[bytes]]:
    """One message; bounds are checked before each allocation (WireTimeoutError, ...)."""
    size = int.from_bytes(_read(fd, 8, deadline), "big")
    if size > MAX_HEADER:
        raise WireError(f"header of {size} bytes exceeds {MAX_HEADER}")
    try:
        header = json.loads(_read(fd, size, deadline))
        message, lengths = header["m"], header["b"]
    except (ValueError, KeyError, TypeError) as error:
        raise WireError("malformed header") from error
    if not isinstance(message, dict) or not isinstance(lengths, list):
        raise WireError("malformed header")
    if any(not isinstance(n, int) or not 0 <= n <= MAX_TENSOR_BYTES for n in lengths):
        raise WireError("tensor too large")
    if sum(lengths) > MAX_MESSAGE_BYTES:
        raise WireError("message too large")
    body = memoryview(_read(fd, sum(lengths), deadline))  # every tensor in one read
    blobs, start = [], 0
    for n in lengths:
        blobs.append(body[start : start + n].tobytes())
        start += n
    return message, blobs


def _read(fd: int, count: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    left = count
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise WireTimeoutError("no answer in time")
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise WireClosedError("the worker ended")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
