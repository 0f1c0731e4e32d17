"""Shared support for boundary suites: malformed values, rejection checks, state prints.

A boundary test calls one public entry point with input that is valid in every
respect but one and asserts three things:

1. the exception is the documented kind: `ValueError` for a bad value, shape,
   dtype or device, `TypeError` for the wrong kind of object (`assert_rejects`);
2. its message names the argument (as a whole word: `positions` is not found
   inside `cache_start_positions`);
3. a stateful object is bit-for-bit as it was (`state_fingerprint` before the
   call, `assert_state_unchanged` after), including which storage each tensor
   lives in.

The hypothesis strategies below generate the malformed values; each suite
decides which exception each class of value must raise. Nothing here knows any
package: suites combine these pieces with their own argument grammar.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from types import BuiltinFunctionType, FunctionType, MethodType
from typing import Any

import torch
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from torch import Tensor

from gptlab_testkit.judge.worker_facts import layout

# ---- hypothesis settings ---------------------------------------------------------------


def boundary_settings(max_examples: int, **overrides: Any) -> settings:
    """Settings for a boundary test: bounded examples, no deadline, reproducible, no database.

    `derandomize` makes every run try the same cases (a failing case is a stable
    regression, and the suite's time is predictable); `database=None` keeps
    `.hypothesis/` out of the working tree. Failing cases are reported as found,
    not shrunk: each is already one mistake in a small valid call, and shrinking a
    state machine against a broken candidate can take minutes of a grading run.
    """
    chosen: dict[str, Any] = {
        "max_examples": max_examples,
        "deadline": None,
        "derandomize": True,
        "database": None,
        "phases": (Phase.explicit, Phase.generate),
        "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    }
    chosen.update(overrides)
    return settings(**chosen)


# ---- malformed values --------------------------------------------------------------------

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

# Integers that break size and index arithmetic: zero, negatives, values past int32,
# past int64, and the int64 edges themselves.
EXTREME_INTS: tuple[int, ...] = (0, -1, -2, 2**31, 2**62, INT64_MAX, INT64_MIN, 2**63, 2**64)

# Floats that pass naive checks: NaN fails every comparison, inf is "positive",
# 1e-45 is positive but underflows when divided into, -0.0 equals 0.
EXTREME_FLOATS: tuple[float, ...] = (
    math.nan,
    math.inf,
    -math.inf,
    1e-45,
    5e-324,
    -0.0,
    -1.0,
    1e308,
)

# Pairs (a, b) with b == a + 1 in wrapping int64 arithmetic: a step-of-one check done
# in int64 ("b - a == 1") passes although the values are not consecutive.
INT64_WRAPAROUND_PAIRS: tuple[tuple[int, int], ...] = ((INT64_MAX, INT64_MIN),)

ALL_DTYPES: tuple[torch.dtype, ...] = (
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.complex64,
)


def extreme_ints(minimum: int | None = None, maximum: int | None = None) -> st.SearchStrategy[int]:
    """Extreme integers outside `[minimum, maximum]` (either bound may be open)."""

    def outside(value: int) -> bool:
        below = minimum is not None and value < minimum
        above = maximum is not None and value > maximum
        return below or above

    candidates = [value for value in EXTREME_INTS if outside(value)]
    if minimum is not None:
        candidates.append(minimum - 1)
    if maximum is not None:
        candidates.append(maximum + 1)
    if not candidates:
        raise ValueError("extreme_ints needs a bound that some extreme value breaks")
    return st.sampled_from(sorted(set(candidates)))


def extreme_floats() -> st.SearchStrategy[float]:
    """NaN, infinities, subnormals and other floats that slip past `x > 0`-style checks."""
    return st.sampled_from(EXTREME_FLOATS)


def wrong_kind_for_int() -> st.SearchStrategy[object]:
    """Objects that are not a plain int: bools, floats (also integral ones), text, None,
    containers. Whether a bool is a TypeError or a ValueError is the suite's
    (documented) choice; `not_an_int_or_bool` leaves bools out."""
    return st.one_of(st.booleans(), not_an_int_or_bool())


def not_an_int_or_bool() -> st.SearchStrategy[object]:
    """Wrong kinds of object where an int is expected, bools excluded."""
    return st.one_of(
        st.sampled_from((2.0, 0.5, math.nan, math.inf, 1e-45)),
        st.just(None),
        st.sampled_from(("1", "", "4")),
        st.lists(st.integers(0, 3), min_size=0, max_size=2),
        st.just({"value": 1}),
        st.just(1 + 0j),
        st.just(object()),
    )


def wrong_kind_for_tensor() -> st.SearchStrategy[object]:
    """Objects where a tensor is expected: None, numbers, text, lists, dicts, tuples."""
    return st.one_of(
        st.just(None),
        st.integers(-2, 2),
        st.sampled_from((0.0, math.nan)),
        st.just("tensor"),
        st.lists(st.integers(0, 3), min_size=0, max_size=3),
        st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=2), min_size=1, max_size=2),
        st.just({"data": [0]}),
        st.just((0, 1)),
        st.just(object()),
    )


def wrong_kind_for_sequence() -> st.SearchStrategy[object]:
    """Objects where a sequence (tuple/list of items) is expected: None, numbers, dicts,
    text, and a set (unordered)."""
    return st.one_of(
        st.just(None),
        st.integers(-1, 3),
        st.just(1.5),
        st.just({"0": None}),
        st.just("ab"),
        st.just(frozenset({1})),
        st.just(object()),
    )


def wrong_dtypes(expected: torch.dtype | Sequence[torch.dtype]) -> st.SearchStrategy[torch.dtype]:
    """Every common dtype except the expected one(s)."""
    allowed = (expected,) if isinstance(expected, torch.dtype) else tuple(expected)
    return st.sampled_from([dtype for dtype in ALL_DTYPES if dtype not in allowed])


def malformed_shapes(shape: Sequence[int | None]) -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes wrong in exactly one respect: one fixed size changed, or the rank changed.

    `shape` is the expected shape; None marks a free size (filled with 1 here and
    never varied). Changed sizes include 0 and size + 1; ranks go one down and one up.
    """
    base = tuple(1 if size is None else size for size in shape)
    options: list[tuple[int, ...]] = []
    for axis, size in enumerate(shape):
        if size is None:
            continue
        for wrong in {0, size + 1, size - 1, size * 2}:
            if wrong >= 0 and wrong != size:
                options.append((*base[:axis], wrong, *base[axis + 1 :]))
    options.append((*base, 1))
    if base:
        options.append(base[:-1])
        options.append((1, *base))
    return st.sampled_from(sorted(set(options)))


def other_devices(device: torch.device | str) -> list[torch.device]:
    """Real devices other than `device` on this machine (none on a CPU-only host).

    A `meta` tensor is not a faithful "other device": value checks on it raise
    RuntimeError before a device check is reached.
    """
    here = torch.device(device)
    found = [torch.device("cpu")]
    if torch.cuda.is_available():
        found += [torch.device("cuda", index) for index in range(torch.cuda.device_count())]
    return [other for other in found if not _same_device(other, here)]


def _same_device(first: torch.device, second: torch.device) -> bool:
    if first.type != second.type:
        return False
    return (first.index or 0) == (second.index or 0)


def like(
    tensor: Tensor,
    *,
    shape: Sequence[int] | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> Tensor:
    """A new tensor like `tensor`, wrong in exactly the respects given.

    With a new shape the values are zeros; with a new dtype or device the values are
    converted (so ids stay ids and positions stay positions where they fit).
    """
    result = tensor.detach().clone()  # never shares storage with `tensor`
    if shape is not None:
        result = result.new_zeros(tuple(shape))
    if dtype is not None:
        result = result.to(dtype)
    if device is not None:
        result = result.to(device)
    return result


# ---- rejection ---------------------------------------------------------------------------

ExceptionTypes = type[BaseException] | tuple[type[BaseException], ...]

# The one error policy of every contract (mechanisms, drills, model builds):
# - a wrong kind of object (not a tensor where one is expected, a list for an int, a bool
#   for an int) and a tensor of the wrong dtype: ValueError or TypeError, both accepted;
# - a bad value (a shape, a range, NaN where a finite number is required): ValueError;
# - the message names the argument (its parameter name) or the offending value.
WRONG_KIND: tuple[type[BaseException], ...] = (TypeError, ValueError)
WRONG_DTYPE = WRONG_KIND
BAD_VALUE: type[BaseException] = ValueError

# How many rejections each argument name was checked for (a suite can report its count).
rejections: Counter[str] = Counter()


def names_argument(message: str, argument: str) -> bool:
    """True when `argument` occurs in `message` as a whole name (not inside a longer one)."""
    return (
        re.search(rf"(?<![A-Za-z0-9_]){re.escape(argument)}(?![A-Za-z0-9_])", message) is not None
    )


def names_value(message: str, value: object) -> bool:
    """True when the text of `value` (its str or repr) occurs in `message` as a whole token."""
    texts = {str(value), repr(value)}
    return any(
        re.search(rf"(?<![A-Za-z0-9_.]){re.escape(text)}(?![A-Za-z0-9_])", message) is not None
        for text in texts
        if text
    )


def assert_rejects(
    call: Callable[[], object],
    exc_types: ExceptionTypes,
    argument: str | Sequence[str],
    *,
    values: Sequence[object] = (),
) -> BaseException:
    """`call()` raises one of `exc_types` whose message names `argument` (or one of them)
    or contains one of the offending `values` (the policy lets a message name either).

    An exception of any other type (AttributeError, IndexError, a RuntimeError from
    deep inside torch) fails the assertion with what was raised, so a suite reports
    "foreign error" and "silently accepted" as different failures.
    """
    names = (argument,) if isinstance(argument, str) else tuple(argument)
    wanted = f"{_type_names(exc_types)} naming {' or '.join(names)}"
    if values:
        wanted += f" (or the value {' or '.join(repr(v) for v in values)})"
    try:
        result = call()
    except exc_types as raised:
        error = raised
    except Exception as foreign:
        raise AssertionError(
            f"expected {wanted}, got {type(foreign).__name__}: {foreign}"
        ) from foreign
    else:
        raise AssertionError(
            f"expected {wanted}, but the call was accepted and returned {type(result).__name__}"
        )
    message = str(error)
    assert any(names_argument(message, name) for name in names) or any(
        names_value(message, value) for value in values
    ), f"{type(error).__name__} does not name {wanted.split(' naming ', 1)[1]}: {message!r}"
    rejections[names[0]] += 1
    return error


def _type_names(exc_types: ExceptionTypes) -> str:
    types = exc_types if isinstance(exc_types, tuple) else (exc_types,)
    return " or ".join(t.__name__ for t in types)


def assert_rejected_unchanged(
    owner: object,
    call: Callable[[], object],
    exc_types: ExceptionTypes,
    argument: str | Sequence[str],
    *,
    identity: bool = True,
    values: Sequence[object] = (),
) -> BaseException:
    """`assert_rejects`, plus: `owner` is bit-for-bit the same afterwards."""
    before = state_fingerprint(owner, identity=identity)
    error = assert_rejects(call, exc_types, argument, values=values)
    assert_state_unchanged(owner, before, identity=identity)
    return error


# ---- state fingerprints --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class TensorState:
    """A tensor's metadata, bytes and (optionally) storage identity, compared exactly.

    Bytes are compared, not values, so NaN == NaN and -0.0 != 0.0 here: "bit-for-bit".
    """

    dtype: torch.dtype
    shape: tuple[int, ...]
    device: torch.device
    requires_grad: bool
    identity: tuple[Any, ...] | None  # data_ptr, storage offset, strides
    data: Tensor | None  # uint8 copy of the elements (None for meta tensors)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorState):
            return NotImplemented
        same_meta = (self.dtype, self.shape, self.device, self.requires_grad, self.identity) == (
            other.dtype,
            other.shape,
            other.device,
            other.requires_grad,
            other.identity,
        )
        if not same_meta:
            return False
        if self.data is None or other.data is None:
            return self.data is other.data
        return bool(torch.equal(self.data, other.data))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        where = "" if self.identity is None else f", storage {self.identity}"
        return f"TensorState({self.dtype}, {list(self.shape)}, {self.device}{where})"


def tensor_state(tensor: Tensor, *, identity: bool = True) -> TensorState:
    detached = tensor.detach()
    data = None
    if detached.device.type != "meta":
        # A fresh contiguous copy: .contiguous() keeps a size-1 view's stride (say 3), and
        # view(torch.uint8) needs a unit stride.
        flat = detached.cpu().reshape(-1).clone(memory_format=torch.contiguous_format)
        if flat.dtype == torch.bool:
            flat = flat.to(torch.uint8)
        data = flat.view(torch.uint8).clone()
    where = None
    if identity and detached.device.type != "meta":
        where = layout(tensor)  # in judge mode, the worker's memory as it reported it
    return TensorState(
        dtype=tensor.dtype,
        shape=tuple(tensor.shape),
        device=tensor.device,
        requires_grad=tensor.requires_grad,
        identity=where,
        data=data,
    )


Fingerprint = dict[str, object]
_MAX_DEPTH = 12


def state_fingerprint(obj: object, *, identity: bool = True) -> Fingerprint:
    """A flat `{path: leaf}` record of everything reachable from `obj`'s attributes.

    Tensors become `TensorState`s (bytes, metadata and, with `identity`, the storage
    they live in); dict order is recorded (an LRU's recency is its order); modules
    are recorded by their state dict and mode; objects by their attributes; other
    values by equality. Shared and cyclic references are recorded once.
    """
    record: Fingerprint = {}
    if callable(getattr(type(obj), "_worker_state", None)):  # judge mode: a remote object's
        obj = obj._worker_state()  # type: ignore[attr-defined]  # state, dumped by its worker
    _walk(obj, "", record, identity, seen={}, depth=0)
    return record


class CountingModel(torch.nn.Module):
    """A model that counts its calls: a rejection test asserts `calls == 0` afterwards.

    Only `forward` is wrapped: an engine that looks for a serving seam on the model
    finds none and takes its plain route, which is the route being counted.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.inner = model
        self.calls = 0

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.inner(*args, **kwargs)


def assert_state_unchanged(obj: object, before: Fingerprint, *, identity: bool = True) -> None:
    """`obj` fingerprints as `before` did; the message lists the first paths that differ."""
    after = state_fingerprint(obj, identity=identity)
    absent = "<absent>"
    changed = sorted(
        path
        for path in before.keys() | after.keys()
        if before.get(path, absent) != after.get(path, absent)
    )
    # Floats are recorded by their bits (see `_leaf`), so NaN == NaN here.
    assert not changed, "state changed by a rejected call at " + ", ".join(
        f"{path or '<root>'}: {before.get(path, absent)!r} -> {after.get(path, absent)!r}"
        for path in changed[:5]
    )


def _walk(
    value: object, path: str, record: Fingerprint, identity: bool, seen: dict[int, str], depth: int
) -> None:
    leaf = _leaf(value)
    if leaf is not _NOT_A_LEAF:
        record[path] = leaf
        return
    if isinstance(value, Tensor):
        record[path] = tensor_state(value, identity=identity)
        return
    if id(value) in seen:  # shared or cyclic: record which path it is the same object as
        record[path] = ("same object as", seen[id(value)])
        return
    seen[id(value)] = path
    if depth >= _MAX_DEPTH:
        record[path] = ("too deep", type(value).__name__, id(value))
        return
    record[path] = ("type", type(value).__qualname__)
    for name, child in _children(value, identity):
        _walk(child, f"{path}{name}", record, identity, seen, depth + 1)


_NOT_A_LEAF = object()


def _leaf(value: object) -> object:
    """Values compared by equality (floats by bits, so NaN is stable), or `_NOT_A_LEAF`."""
    if value is None or isinstance(value, bool | int | str | bytes | torch.dtype | torch.device):
        return value
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, Enum):
        return value
    if isinstance(value, FunctionType | MethodType | BuiltinFunctionType):
        # By name: a bound method is a new object on every attribute access.
        return ("callable", getattr(value, "__qualname__", type(value).__qualname__))
    if isinstance(value, type):
        return ("class", value.__qualname__)
    return _NOT_A_LEAF


def _children(value: object, identity: bool) -> list[tuple[str, object]]:
    if isinstance(value, torch.nn.Module):
        children: list[tuple[str, object]] = [(".training", value.training)]
        state = value.state_dict(keep_vars=True)
        children += [(f"[{name!r}]", tensor) for name, tensor in state.items()]
        return children
    if isinstance(value, torch.Generator):
        return [(".state", value.get_state())]
    if isinstance(value, Mapping):
        # Keys are recorded in order (insertion order is state: recency), then each value.
        items = list(value.items())
        keys: list[tuple[str, object]] = [(".keys", tuple(_key_print(key) for key, _ in items))]
        return keys + [(f"[{_key_print(key)!r}]", item) for key, item in items]
    if isinstance(value, list | tuple):
        return [(f"[{index}]", item) for index, item in enumerate(value)]
    if isinstance(value, set | frozenset):
        return [(".items", tuple(sorted(repr(item) for item in value)))]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            (f".{field.name}", getattr(value, field.name)) for field in dataclasses.fields(value)
        ]
    attributes = dict(getattr(value, "__dict__", {}))
    for slot in _slots(type(value)):
        if hasattr(value, slot):
            attributes[slot] = getattr(value, slot)
    if not attributes:
        return [(".repr", repr(value))]
    return [(f".{name}", attributes[name]) for name in sorted(attributes)]


def _key_print(key: object) -> object:
    """A hashable, comparable stand-in for a mapping key (tensor keys by identity)."""
    return ("tensor", id(key)) if isinstance(key, Tensor) else key


def _slots(cls: type) -> list[str]:
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return [name for name in names if name not in ("__dict__", "__weakref__")]


# ---- state dicts (checkpoint converters) -------------------------------------------------

# (names a message may use, the malformed state dict, the exception type)
StateDictCase = tuple[tuple[str, ...], dict[str, Tensor], type[Exception]]


@st.composite
def state_dict_cases(
    draw: st.DrawFn,
    state: Mapping[str, Tensor],
    shown: Callable[[str], str],
    layer_prefix: str,
    fixed_shape: Callable[[str], bool],
) -> StateDictCase:
    """A checkpoint state dict with one thing wrong, for a converter's boundary test.

    One key missing (never ``*lm_head.weight``: tied checkpoints omit it), misshapen
    (only keys whose shape ``fixed_shape`` says is pinned; a key that sizes the model
    is free), not a tensor (TypeError), or not floating point; or one key of a layer
    past the last (``{layer_prefix}{i}.``), or of layer 999999999, which a converter
    must name without enumerating that many layers. ``shown(key)`` is the name the
    error message must use for ``key`` (say, without a ``transformer.`` prefix).
    """
    names = sorted(state)
    removable = [name for name in names if not name.endswith("lm_head.weight")]
    layers = {
        int(name.removeprefix(layer_prefix).split(".")[0])
        for name in names
        if name.startswith(layer_prefix)
    }
    last = max(layers)
    edit = draw(st.sampled_from(["missing", "shape", "kind", "dtype", "extra_layer", "absurd"]))
    if edit == "missing":
        name = draw(st.sampled_from(removable))
        return (shown(name),), {n: t for n, t in state.items() if n != name}, ValueError
    if edit in ("shape", "kind", "dtype"):
        pool = names if edit != "shape" else [name for name in names if fixed_shape(name)]
        name = draw(st.sampled_from(pool))
        tensor = state[name]
        value: object
        if edit == "shape":
            value = like(tensor, shape=draw(malformed_shapes(list(tensor.shape))))
        elif edit == "kind":
            value = draw(wrong_kind_for_tensor())
        else:
            value = like(tensor, dtype=draw(st.sampled_from([torch.long, torch.int32, torch.bool])))
        kind: type[Exception] = TypeError if edit == "kind" else ValueError
        return (shown(name), name), {**state, name: value}, kind  # type: ignore[dict-item]
    # One key of a layer past the last: unexpected (given the layer count), or else its
    # layer's other keys are missing; either way the error names a key of that layer.
    prefix_last = f"{layer_prefix}{last}."
    index = last + 1 if edit == "extra_layer" else 999_999_999
    layer = {
        f"{layer_prefix}{index}.{name.removeprefix(prefix_last)}": tensor
        for name, tensor in state.items()
        if name.startswith(prefix_last)
    }
    added = draw(st.sampled_from(sorted(layer)))
    return tuple(shown(name) for name in layer), {**state, added: layer[added]}, ValueError


# ---- one malformed argument -------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Malformed:
    """A call's argument `argument` replaced by `value`, which must raise `error`."""

    argument: str
    value: object
    error: type[Exception]


def malformed(
    argument: str, values: st.SearchStrategy[object], error: type[Exception]
) -> st.SearchStrategy[Malformed]:
    """`values` as cases for one argument: a suite's grammar is a dict of these per name."""
    return values.map(lambda value: Malformed(argument, value, error))


def not_callable() -> st.SearchStrategy[object]:
    """Objects where a callable (a model, say) is expected."""
    return st.one_of(wrong_kind_for_tensor(), wrong_kind_for_sequence())


def tensor_cases(
    name: str, tensor: Tensor, *, optional: bool = False
) -> list[st.SearchStrategy[Malformed]]:
    """`name` given as the wrong kind (TypeError; its values as nested lists included), or as
    a tensor of another dtype, a malformed shape or on another real device (ValueError).

    With `optional`, None is a valid value and is left out of the wrong kinds.
    """
    kinds = st.one_of(wrong_kind_for_tensor(), st.just(tensor.tolist()))
    if optional:
        kinds = kinds.filter(lambda value: value is not None)
    others = [like(tensor, device=other) for other in other_devices(tensor.device)]
    return [
        malformed(name, kinds, TypeError),
        malformed(
            name, wrong_dtypes(tensor.dtype).map(lambda d: like(tensor, dtype=d)), ValueError
        ),
        malformed(
            name,
            malformed_shapes(tuple(tensor.shape)).map(lambda s: like(tensor, shape=s)),
            ValueError,
        ),
        *([malformed(name, st.sampled_from(others), ValueError)] if others else []),
    ]


__all__ = [
    "ALL_DTYPES",
    "BAD_VALUE",
    "EXTREME_FLOATS",
    "EXTREME_INTS",
    "INT64_MAX",
    "INT64_MIN",
    "INT64_WRAPAROUND_PAIRS",
    "WRONG_DTYPE",
    "WRONG_KIND",
    "Malformed",
    "StateDictCase",
    "TensorState",
    "assert_rejected_unchanged",
    "assert_rejects",
    "assert_state_unchanged",
    "boundary_settings",
    "extreme_floats",
    "extreme_ints",
    "like",
    "malformed",
    "malformed_shapes",
    "names_argument",
    "names_value",
    "not_an_int_or_bool",
    "not_callable",
    "other_devices",
    "rejections",
    "state_dict_cases",
    "state_fingerprint",
    "tensor_cases",
    "tensor_state",
    "wrong_dtypes",
    "wrong_kind_for_int",
    "wrong_kind_for_sequence",
    "wrong_kind_for_tensor",
]
