"""What the judge and a candidate's worker say to each other: values, never code.

A message is an 8-byte length, a JSON header, then raw tensor bytes. Plain data travels
as JSON (lists, tuples, dicts, None, bools, numbers, strings, dtypes, devices, slices);
a tensor travels by value (dtype, shape, the contiguous bytes); a torch.Generator as its
state; an object that must stay in the worker (a module instance, a class) as a handle
id. Nothing is pickled: decoding builds only these types, so bytes from a candidate's
process can never run code in the judge. Every size is checked before anything is
allocated: the header's length, each tensor's dtype, shape and byte count.

This module imports only the standard library and torch: the worker loads it by path
(`worker.py`), outside this package.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

import torch

MAX_HEADER = 16 * 1024 * 1024  # bytes of JSON in one message
MAX_TENSOR_BYTES = 1 << 30  # one tensor
MAX_MESSAGE_BYTES = 2 << 30  # all tensors of one message
MAX_DIMS = 16
DTYPES = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64,
        torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64,
        torch.complex128,
    )
}  # fmt: skip


class WireError(Exception):
    """A message that breaks the format or its bounds (the sender is not trusted)."""


class WireTimeoutError(WireError):
    pass


class WireClosedError(WireError):
    pass


class Handle:
    """An object living in the worker, named by its id there (and its type, for messages)."""

    def __init__(self, ident: int, kind: str) -> None:
        self.ident = ident
        self.kind = kind


# -- encoding (either side)


def encode(value: Any, blobs: list[bytes], handles: Any = None) -> Any:
    """`value` as JSON-able data; tensor bytes appended to `blobs`. `handles(obj)` gives
    the handle of an object that cannot travel (worker side); None: such a value is an error."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, torch.Tensor):
        return {"t": _tensor(value, blobs)}
    if isinstance(value, torch.Size):
        return {"T": list(value)}
    if isinstance(value, tuple | list):
        return {
            "T" if isinstance(value, tuple) else "L": [encode(v, blobs, handles) for v in value]
        }
    if isinstance(value, dict):
        return {
            "D": [[encode(k, blobs, handles), encode(v, blobs, handles)] for k, v in value.items()]
        }
    if isinstance(value, torch.dtype):
        return {"dt": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"dev": str(value)}
    if isinstance(value, slice):
        return {"sl": [encode(v, blobs, handles) for v in (value.start, value.stop, value.step)]}
    if isinstance(value, torch.Generator):
        return {"gen": _tensor(value.get_state(), blobs), "device": str(value.device)}
    if isinstance(value, Handle):
        return {"h": value.ident, "kind": value.kind}
    if handles is not None:
        ident, kind = handles(value)
        return {"h": ident, "kind": kind}
    raise TypeError(f"cannot send a {type(value).__name__} to the candidate's worker")


def _tensor(tensor: torch.Tensor, blobs: list[bytes]) -> list[Any]:
    if tensor.device.type == "meta":  # shape and dtype only: a meta tensor holds no data
        blobs.append(b"")
        return [
            len(blobs) - 1,
            str(tensor.dtype).removeprefix("torch."),
            list(tensor.shape),
            "meta",
        ]
    plain = tensor.detach().to("cpu").contiguous()
    dtype = str(plain.dtype).removeprefix("torch.")
    if dtype not in DTYPES:
        raise TypeError(f"cannot send a {plain.dtype} tensor")
    data = plain.reshape(-1).view(torch.uint8).numpy().tobytes() if plain.numel() else b""
    blobs.append(data)
    return [len(blobs) - 1, dtype, list(plain.shape), str(tensor.device)]


# -- decoding (either side): only the types above are ever built


def decode(data: Any, blobs: list[bytes], handle: Any = None) -> Any:
    if data is None or isinstance(data, bool | int | float | str):
        return data
    if not isinstance(data, dict) or len(data) not in (1, 2):
        raise WireError("malformed value")
    if "t" in data:
        return _untensor(data["t"], blobs)
    if "T" in data:
        return tuple(decode(v, blobs, handle) for v in _list(data["T"]))
    if "L" in data:
        return [decode(v, blobs, handle) for v in _list(data["L"])]
    if "D" in data:
        return {decode(k, blobs, handle): decode(v, blobs, handle) for k, v in _pairs(data["D"])}
    if "dt" in data:
        return _dtype(data["dt"])
    if "dev" in data:
        return torch.device(str(data["dev"]))
    if "sl" in data:
        return slice(*(decode(v, blobs, handle) for v in _list(data["sl"])))
    if "gen" in data:
        generator = torch.Generator(device=str(data.get("device", "cpu")))
        generator.set_state(_untensor(data["gen"], blobs))
        return generator
    if "h" in data:
        if handle is None:
            raise WireError("unexpected handle")
        return handle(int(data["h"]), str(data.get("kind", "object")))
    raise WireError("unknown value kind")


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


def _untensor(spec: Any, blobs: list[bytes]) -> torch.Tensor:
    if not isinstance(spec, list) or len(spec) != 4:
        raise WireError("malformed tensor")
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
    if device == "meta" and not data:
        return torch.empty(shape, dtype=dtype, device="meta")
    if numel * dtype.itemsize != len(data):
        raise WireError(f"tensor of shape {shape} ({name}) does not match its {len(data)} bytes")
    flat = (
        torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype)
        if numel
        else torch.empty(0, dtype=dtype)
    )
    tensor = flat.reshape(shape)
    return tensor if str(device) == "cpu" else tensor.to(str(device))


# -- framing


def send(fd: int, message: dict[str, Any], blobs: list[bytes]) -> None:
    header = json.dumps({"m": message, "b": [len(b) for b in blobs]}).encode()
    parts = [len(header).to_bytes(8, "big"), header, *blobs]
    for part in parts:
        view = memoryview(part)
        while view:
            written = os.write(fd, view)
            view = view[written:]


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
    return message, [_read(fd, n, deadline) for n in lengths]


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
