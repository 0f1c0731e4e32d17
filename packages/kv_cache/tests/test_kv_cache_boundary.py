"""Extension: every entry point's argument grammar, broken one rule at a time (hypothesis).

Each generated call is valid in every respect but one. It must raise TypeError (a
wrong kind of object) or ValueError (a wrong value, shape, dtype or device) whose
message names the argument, and leave the cache, or the caller's tensors, bit-for-bit
as they were (storage identity included). For every grammar a test also proves the
unbroken call is accepted, so a case can never pass for a reason other than its one
mistake. The contract lists no kv_cache errors: these are this project's behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from gptlab_testkit import candidate, test_device
from gptlab_testkit.boundary import (
    INT64_MAX,
    INT64_MIN,
    assert_rejected_unchanged,
    boundary_settings,
    like,
    malformed_shapes,
    other_devices,
    wrong_dtypes,
    wrong_kind_for_int,
    wrong_kind_for_sequence,
    wrong_kind_for_tensor,
)
from gptlab_testkit.objects import assert_other_memory, object_id, reported

kvc = candidate("KV_CACHE_MODULE")

pytestmark = [pytest.mark.owner("kv_cache_validation"), pytest.mark.extension]

LAYERS, B, H, CAP, D = 2, 2, 2, 8, 3
DEVICE = test_device()
OTHER_DEVICES = other_devices(DEVICE)
EXAMPLES = boundary_settings(max_examples=45)

Past = tuple[tuple[Any, Any], ...]


@dataclass
class Bad:
    """One malformed call: its arguments, the error it must raise, the names it may cite."""

    args: tuple[Any, ...]
    error: type[Exception]
    names: tuple[str, ...]


def long(values: Any) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=DEVICE)


def random_past(tokens: int, seed: int, layers: int = LAYERS) -> Past:
    generator = torch.Generator().manual_seed(seed)
    return tuple(
        tuple(torch.randn(B, H, tokens, D, generator=generator).to(DEVICE) for _ in range(2))
        for _ in range(layers)
    )  # type: ignore[return-value]


def replaced(past: Past, layer: int, index: int, tensor: Any) -> Past:
    """`past` with one key (index 0) or value (index 1) swapped for `tensor`."""
    pairs = [list(pair) for pair in past]
    pairs[layer][index] = tensor
    return tuple(tuple(pair) for pair in pairs)  # type: ignore[misc]


# ---- shared pieces of the grammar ------------------------------------------------------


@st.composite
def broken_past(
    draw: st.DrawFn, past: Past, tokens: int, owner: Any = None, sized_by_past: bool = False
) -> Bad:
    """`past_key_values` (L pairs of [B, H, tokens, D]) broken in one way.

    `owner`: the cache whose storage an aliasing case reuses. `sized_by_past`: the
    call takes its layer count from `past` (from_past_key_values), so only zero
    layers is a wrong count.
    """
    layer, index = draw(st.integers(0, LAYERS - 1)), draw(st.integers(0, 1))
    tensor = past[layer][index]
    kinds = ["kind", "layers", "pair kind", "pair length", "tensor kind", "shape", "dtype"]
    kinds += ["device"] * bool(OTHER_DEVICES) + ["alias"] * (owner is not None)
    kind = draw(st.sampled_from(kinds))
    name = ("past_key_values",)
    if kind == "kind":
        return Bad((draw(wrong_kind_for_sequence()),), TypeError, name)
    if kind == "layers":
        count = draw(st.sampled_from([0] if sized_by_past else [0, LAYERS - 1, LAYERS + 1]))
        return Bad(((past * 2)[:count],), ValueError, name)
    if kind == "pair kind":
        pairs = list(past)
        pairs[layer] = draw(wrong_kind_for_sequence())
        return Bad((tuple(pairs),), TypeError, name)
    if kind == "pair length":
        pairs = list(past)
        pairs[layer] = draw(st.sampled_from([(tensor,), (tensor, tensor, tensor), ()]))
        return Bad((tuple(pairs),), ValueError, name)
    if kind == "tensor kind":
        return Bad((replaced(past, layer, index, draw(wrong_kind_for_tensor())),), TypeError, name)
    if kind == "shape":
        shape = draw(malformed_shapes((B, H, tokens, D)))
        return Bad((replaced(past, layer, index, like(tensor, shape=shape)),), ValueError, name)
    if kind == "dtype":
        dtype = draw(wrong_dtypes(tensor.dtype))
        return Bad((replaced(past, layer, index, like(tensor, dtype=dtype)),), ValueError, name)
    if kind == "device":
        device = draw(st.sampled_from(OTHER_DEVICES))
        return Bad((replaced(past, layer, index, like(tensor, device=device)),), ValueError, name)
    # alias: a view of the cache's own storage where new K/V belong
    storage = owner.storage[draw(st.integers(0, LAYERS - 1))][draw(st.integers(0, 1))]
    view = storage[:, :, :tokens]
    return Bad((replaced(past, layer, index, view),), ValueError, name)


@st.composite
def broken_long_vector(
    draw: st.DrawFn, name: str, valid: torch.Tensor, bad_values: list[int], tensor_only: bool = True
) -> Bad:
    """A long `[B]` argument broken in one way: kind, dtype, shape, device or one row's value.

    `tensor_only=False`: the argument also takes other forms, so "not a tensor" is no
    mistake by itself (the caller generates the wrong kinds).
    """
    kinds = ["dtype", "shape", "value"] + ["kind"] * tensor_only + ["device"] * bool(OTHER_DEVICES)
    kind = draw(st.sampled_from(kinds))
    if kind == "kind":
        return Bad((draw(wrong_kind_for_tensor()),), TypeError, (name,))
    if kind == "dtype":
        return Bad((like(valid, dtype=draw(wrong_dtypes(torch.long))),), ValueError, (name,))
    if kind == "shape":
        return Bad((like(valid, shape=draw(malformed_shapes((B,)))),), ValueError, (name,))
    if kind == "device":
        return Bad((like(valid, device=draw(st.sampled_from(OTHER_DEVICES))),), ValueError, (name,))
    broken = valid.clone()
    broken[draw(st.integers(0, B - 1))] = draw(st.sampled_from(bad_values))
    return Bad((broken,), ValueError, (name,))


# ---- a cache in a random valid state ---------------------------------------------------


@dataclass
class Loaded:
    """A cache whose rows hold `lengths` tokens from `starts` (storage written by load)."""

    cache: Any
    starts: list[int]
    lengths: list[int]

    def next_positions(self, tokens: int) -> torch.Tensor:
        rows = [
            [s + n + t for t in range(tokens)]
            for s, n in zip(self.starts, self.lengths, strict=True)
        ]
        return long(rows)


@st.composite
def loaded_caches(draw: st.DrawFn, room: int = 1) -> Loaded:
    """A cache with lengths in [0, CAP - room] and starts up to 2**40 (a large origin)."""
    starts = draw(st.lists(st.sampled_from([0, 1, 5, 2**40]), min_size=B, max_size=B))
    lengths = draw(st.lists(st.integers(0, CAP - room), min_size=B, max_size=B))
    cache = kvc.KVCache(LAYERS, B, H, CAP, D, device=DEVICE, start_positions=long(starts))
    cache.load(
        random_past(max(lengths), seed=draw(st.integers(0, 99))), long(lengths), long(starts)
    )
    return Loaded(cache, starts, lengths)


# ---- KVCache.append --------------------------------------------------------------------


@st.composite
def append_calls(draw: st.DrawFn, broken: bool = True) -> tuple[Loaded, Bad]:
    state = draw(loaded_caches())
    tokens = draw(st.integers(1, CAP - max(state.lengths)))
    past, positions = random_past(tokens, seed=7), state.next_positions(tokens)
    if not broken:
        return state, Bad((past, positions), Exception, ())
    if draw(st.booleans()):
        bad = draw(broken_past(past, tokens, owner=state.cache))
        return state, Bad((bad.args[0], positions), bad.error, bad.names)
    bad = draw(broken_positions(state, positions))
    args = (past, *bad.args) if len(bad.args) == 1 else bad.args
    return state, Bad(args, bad.error, bad.names)


@st.composite
def broken_positions(draw: st.DrawFn, state: Loaded, positions: torch.Tensor) -> Bad:
    """`positions` broken in one way; args are (positions,) or (past, positions)."""
    tokens = positions.shape[1]
    kinds = ["kind", "dtype", "shape", "cell", "row shift", "capacity", "token count"]
    kinds += ["wraparound"] * (tokens >= 2) + ["device"] * bool(OTHER_DEVICES)
    kind = draw(st.sampled_from(kinds))
    name = ("positions",)
    if kind == "kind":
        return Bad((draw(wrong_kind_for_tensor()),), TypeError, name)
    if kind == "dtype":
        return Bad((like(positions, dtype=draw(wrong_dtypes(torch.long))),), ValueError, name)
    if kind == "shape":
        return Bad((like(positions, shape=draw(malformed_shapes((B, None)))),), ValueError, name)
    if kind == "device":
        return Bad(
            (like(positions, device=draw(st.sampled_from(OTHER_DEVICES))),), ValueError, name
        )
    row, column = draw(st.integers(0, B - 1)), draw(st.integers(0, tokens - 1))
    broken = positions.clone()
    expected = int(positions[row, column])
    if kind == "cell":  # every column is checked, not only the ends
        choices = [expected - 1, expected + 1, expected + CAP, -1, 0, INT64_MAX, INT64_MIN]
        broken[row, column] = draw(st.sampled_from([v for v in choices if v != expected]))
        return Bad((broken,), ValueError, name)
    if kind == "row shift":
        broken[row] += draw(st.sampled_from([-1, 1, 2, -CAP]))
        return Bad((broken,), ValueError, name)
    if kind == "wraparound":  # a step of one in wrapping int64 arithmetic
        column = min(column, tokens - 2)
        broken[row, column], broken[row, column + 1] = INT64_MAX, INT64_MIN
        return Bad((broken,), ValueError, name)
    if kind == "token count":  # K/V for one more token than the positions name
        return Bad(
            (random_past(tokens + 1, seed=3), positions),
            ValueError,
            ("positions", "past_key_values"),
        )
    # capacity: consistent positions and K/V, one token more than the longest row has room for
    over = CAP - max(state.lengths) + 1
    return Bad((random_past(over, seed=5), state.next_positions(over)), ValueError, name)


@given(call=append_calls())
@EXAMPLES
def test_malformed_append_is_rejected_and_changes_nothing(call):
    state, bad = call
    assert_rejected_unchanged(
        state.cache, lambda: state.cache.append(*bad.args), bad.error, bad.names
    )


@given(call=append_calls(broken=False))
@boundary_settings(max_examples=10)
def test_the_unbroken_append_is_accepted(call):
    state, valid = call
    state.cache.append(*valid.args)
    assert state.cache.cache_lengths.tolist() == [n + valid.args[1].shape[1] for n in state.lengths]


# ---- KVCache.load and KVCache.from_past_key_values --------------------------------------

BAD_LENGTHS = [-1, CAP + 1, 2**62, INT64_MIN]
BAD_STARTS = [-1, INT64_MIN, INT64_MAX, INT64_MAX - CAP + 1]


@st.composite
def load_arguments(draw: st.DrawFn, owner: Any, broken: bool = True) -> Bad:
    """(past_key_values, cache_lengths, cache_start_positions), broken in one argument.

    Without an `owner` cache these are from_past_key_values' arguments: the cache is
    sized from the given K/V, so more layers or slots than CAP are no mistake there.
    """
    slots = draw(st.integers(1, CAP))
    past = random_past(slots, seed=11)
    lengths = long(draw(st.lists(st.integers(0, slots), min_size=B, max_size=B)))
    starts = long(draw(st.lists(st.sampled_from([0, 3, 2**40]), min_size=B, max_size=B)))
    if not broken:
        return Bad((past, lengths, starts), Exception, ())
    target = draw(st.sampled_from(["past", "past", "lengths", "starts"]))
    if target == "past":
        if owner is not None and draw(st.integers(0, 5)) == 0:  # consistent, but too long
            bad = Bad((random_past(CAP + 1, seed=2),), ValueError, ("past_key_values",))
            lengths = long([0] * B)
        else:
            bad = draw(broken_past(past, slots, owner=owner, sized_by_past=owner is None))
        return Bad((bad.args[0], lengths, starts), bad.error, bad.names)
    if target == "lengths":
        values = [v for v in BAD_LENGTHS if v < 0 or v > slots] + [slots + 1]
        bad = draw(broken_long_vector("cache_lengths", lengths, values))
        return Bad((past, bad.args[0], starts), bad.error, bad.names)
    bad = draw(broken_long_vector("cache_start_positions", starts, BAD_STARTS))
    return Bad((past, lengths, bad.args[0]), bad.error, bad.names)


@given(data=st.data())
@EXAMPLES
def test_malformed_load_is_rejected_and_changes_nothing(data):
    state = data.draw(loaded_caches(room=0))
    bad = data.draw(load_arguments(state.cache))
    assert_rejected_unchanged(
        state.cache, lambda: state.cache.load(*bad.args), bad.error, bad.names
    )


@given(data=st.data())
@boundary_settings(max_examples=10)
def test_the_unbroken_load_is_accepted(data):
    state = data.draw(loaded_caches(room=0))
    valid = data.draw(load_arguments(state.cache, broken=False))
    state.cache.load(*valid.args)
    assert torch.equal(state.cache.cache_lengths, valid.args[1])


@st.composite
def from_past_arguments(draw: st.DrawFn) -> Bad:
    """from_past_key_values(past, lengths, starts, capacity=...), broken in one argument."""
    if draw(st.integers(0, 3)) > 0:
        bad = draw(load_arguments(owner=None))
        return Bad((*bad.args, None), bad.error, bad.names)
    valid = draw(load_arguments(owner=None, broken=False)).args
    slots = valid[0][0][0].shape[2]
    capacity = draw(
        st.one_of(
            wrong_kind_for_int()
            .filter(lambda value: value is not None)
            .map(lambda v: (v, TypeError)),
            st.sampled_from([0, -1, slots - 1, INT64_MIN]).map(lambda v: (v, ValueError)),
        )
    )
    return Bad((*valid, capacity[0]), capacity[1], ("capacity",))


@given(bad=from_past_arguments())
@EXAMPLES
def test_malformed_from_past_key_values_is_rejected_and_reads_only(bad):
    *inputs, capacity = bad.args

    def call() -> object:
        return kvc.KVCache.from_past_key_values(*inputs, capacity=capacity)

    assert_rejected_unchanged(tuple(inputs), call, bad.error, bad.names)


def test_from_past_key_values_without_slots_needs_a_capacity():
    past = random_past(0, seed=1)
    zeros = long([0] * B)
    assert_rejected_unchanged(
        past,
        lambda: kvc.KVCache.from_past_key_values(past, zeros, zeros),
        ValueError,
        ("capacity", "past_key_values"),
    )


# ---- KVCache.reset and the constructor's start_positions ---------------------------------


@st.composite
def broken_start_positions(draw: st.DrawFn) -> Bad:
    """`start_positions` as a tensor or a sequence of ints, broken in one way."""
    valid = long([0, 4])
    name = ("start_positions",)
    form = draw(st.sampled_from(["tensor", "sequence", "sequence", "kind"]))
    if form == "tensor":
        bad_values = [*BAD_STARTS, -(2**40)]
        return draw(broken_long_vector("start_positions", valid, bad_values, tensor_only=False))
    if form == "kind":
        wrong = draw(wrong_kind_for_sequence().filter(lambda value: value is not None))
        return Bad((wrong,), TypeError, name)
    values: list[Any] = [0, 4]
    row = draw(st.integers(0, B - 1))
    kind = draw(st.sampled_from(["element kind", "length", "value"]))
    if kind == "element kind":
        values[row] = draw(wrong_kind_for_int())
        return Bad((values,), TypeError, name)
    if kind == "length":
        return Bad((values * 2 if draw(st.booleans()) else values[:1],), ValueError, name)
    values[row] = draw(st.sampled_from([-1, INT64_MIN, INT64_MAX, 2**63, 2**64]))
    return Bad((values,), ValueError, name)


@given(state=loaded_caches(room=0), bad=broken_start_positions())
@EXAMPLES
def test_malformed_reset_is_rejected_and_changes_nothing(state, bad):
    assert_rejected_unchanged(
        state.cache, lambda: state.cache.reset(*bad.args), bad.error, bad.names
    )


SIZES = {"layer_count": LAYERS, "batch_size": B, "head_count": H, "capacity": CAP, "head_dim": D}


@st.composite
def constructor_arguments(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], Bad]:
    """KVCache(*sizes, dtype=, device=, start_positions=) broken in one argument."""
    sizes, keywords = dict(SIZES), {"device": DEVICE, "dtype": torch.float32}
    target = draw(st.sampled_from([*SIZES, "dtype", "device", "start_positions"]))
    if target in SIZES:
        kind = draw(st.sampled_from(["kind", "small", "huge"]))
        if kind == "kind":
            sizes[target], error = draw(wrong_kind_for_int()), TypeError
        elif kind == "small":
            sizes[target], error = draw(st.sampled_from([0, -1, INT64_MIN])), ValueError
        else:  # refused before allocating, not after exhausting memory
            sizes[target], error = draw(st.sampled_from([2**40, 2**62, 2**64])), ValueError
        return sizes, keywords, Bad((), error, (target,))
    if target == "dtype":
        wrong_kind = st.sampled_from(["float32", None, float, 4]).map(lambda v: (v, TypeError))
        not_floating = (
            wrong_dtypes([torch.float16, torch.bfloat16, torch.float32, torch.float64])
            .filter(lambda d: not d.is_complex)
            .map(lambda v: (v, ValueError))
        )
        keywords["dtype"], error = draw(st.one_of(wrong_kind, not_floating))
        return sizes, keywords, Bad((), error, ("dtype",))
    if target == "device":
        wrong_kind = st.sampled_from([None, 1.5, [DEVICE], {"type": "cpu"}]).map(
            lambda v: (v, TypeError)
        )
        no_device = st.sampled_from(["cpux", "", "meta", "cuda:999", "gpu"]).map(
            lambda v: (v, ValueError)
        )
        keywords["device"], error = draw(st.one_of(wrong_kind, no_device))
        return sizes, keywords, Bad((), error, ("device",))
    bad = draw(broken_start_positions())
    keywords["start_positions"] = bad.args[0]
    return sizes, keywords, bad


@given(call=constructor_arguments())
@EXAMPLES
def test_malformed_construction_is_refused_fast(call):
    sizes, keywords, bad = call
    assert_rejected_unchanged(
        keywords, lambda: kvc.KVCache(*sizes.values(), **keywords), bad.error, bad.names
    )


# ---- append_kv_cache -------------------------------------------------------------------

SLOT_CAP = 5


@st.composite
def slot_writes(draw: st.DrawFn, broken: bool = True) -> Bad:
    """append_kv_cache(key_cache, value_cache, key_new, value_new, slots), broken once."""
    tokens = draw(st.integers(1, SLOT_CAP))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 99)))

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator).to(DEVICE)

    rows = [draw(st.permutations(range(SLOT_CAP)))[:tokens] for _ in range(B)]
    args = [randn(B, H, SLOT_CAP, D), randn(B, H, SLOT_CAP, D)]
    args += [randn(B, H, tokens, D), randn(B, H, tokens, D), long(rows)]
    if not broken:
        return Bad(tuple(args), Exception, ())
    names = ["key_cache", "value_cache", "key_new", "value_new", "slots"]
    index = draw(st.integers(0, 4))
    name, tensor = names[index], args[index]
    # Naming the argument the others are compared with is also right for a mismatch.
    cited = (name, "key_cache") if index > 0 else ("key_cache", "value_cache", "key_new", "slots")
    kinds = ["kind", "dtype", "shape"] + ["device"] * bool(OTHER_DEVICES)
    kinds += ["slot value", "repeated slot"] if name == "slots" else ["alias"]
    kinds += ["expanded", "inference", "leaf requiring grad"] if index < 2 else []
    kind = draw(st.sampled_from(kinds))
    error: type[Exception] = ValueError
    if kind == "kind":
        args[index], error = draw(wrong_kind_for_tensor()), TypeError
        cited = (name,)
    elif kind == "dtype":
        floats = [torch.float16, torch.float64, torch.bfloat16]
        wrong = draw(wrong_dtypes(torch.long) if name == "slots" else st.sampled_from(floats))
        args[index] = like(tensor, dtype=wrong)
    elif kind == "shape":
        args[index] = like(tensor, shape=draw(malformed_shapes(tensor.shape)))
        if name == "slots":  # a new token count is found wrong against key_new
            cited = ("slots", "key_new")
    elif kind == "device":
        args[index] = like(tensor, device=draw(st.sampled_from(OTHER_DEVICES)))
    elif kind == "slot value":
        broken = tensor.clone()
        broken[draw(st.integers(0, B - 1)), draw(st.integers(0, tokens - 1))] = draw(
            st.sampled_from([-1, SLOT_CAP, 2**62, INT64_MAX, INT64_MIN])
        )
        args[index], cited = broken, ("slots",)
    elif kind == "repeated slot":
        if tokens == 1:
            args[2], args[3] = randn(B, H, 2, D), randn(B, H, 2, D)
            tensor = torch.cat([tensor, tensor], dim=1)
        broken = tensor.clone()
        row = draw(st.integers(0, B - 1))
        broken[row, 1] = broken[row, 0]
        args[index], cited = broken, ("slots",)
    elif kind == "alias":  # the same memory as a cache, passed where separate memory belongs
        if index < 2:
            args[index] = args[1 - index]
        else:
            args[index] = args[draw(st.integers(0, 1))][:, :, :tokens]
        cited = (name,)
    elif kind == "expanded":
        args[index] = tensor[:1].expand(B, H, SLOT_CAP, D)
        cited = (name,)
    elif kind == "inference":
        with torch.inference_mode():
            args[index] = tensor.clone()
        cited = (name,)
    else:
        args[index] = tensor.clone().requires_grad_(True)
        cited = (name,)
    return Bad(tuple(args), error, cited)


@given(bad=slot_writes())
@EXAMPLES
def test_malformed_slot_write_is_rejected_and_writes_nothing(bad):
    assert_rejected_unchanged(
        bad.args, lambda: kvc.append_kv_cache(*bad.args), bad.error, bad.names
    )


@given(valid=slot_writes(broken=False))
@boundary_settings(max_examples=10)
def test_the_unbroken_slot_write_is_accepted(valid):
    key_cache, value_cache, key_new, value_new, slots = valid.args
    kvc.append_kv_cache(*valid.args)
    index = slots[:, None, :, None].expand_as(key_new)
    assert torch.equal(key_cache.gather(2, index), key_new)
    assert torch.equal(value_cache.gather(2, index), value_new)


# ---- the lifecycle as a state machine: valid and malformed calls interleaved ---------------


class KVCacheMachine(RuleBasedStateMachine):
    """Random appends, loads and resets, valid and malformed, against a plain model.

    The model is what the storage must hold, tensor for tensor: `load` copies each
    row's valid prefix and zeroes the rest, `append` writes slot `position - start`,
    `reset` only moves metadata. After every step the cache must equal the model
    exactly, keep its storage objects, and expose consistent views and snapshots.
    """

    def __init__(self) -> None:
        super().__init__()
        self.cache = kvc.KVCache(LAYERS, B, H, CAP, D, device=DEVICE)
        self.storage_ids = [object_id(tensor) for pair in self.cache.storage for tensor in pair]
        self.expected = [torch.zeros(B, H, CAP, D, device=DEVICE) for _ in range(2 * LAYERS)]
        self.lengths, self.starts = [0] * B, [0] * B
        self.seed = 0

    def state(self) -> Loaded:
        return Loaded(self.cache, self.starts, self.lengths)

    def fresh_past(self, tokens: int) -> Past:
        self.seed += 1
        return random_past(tokens, seed=self.seed)

    @rule(tokens=st.integers(1, 3))
    def append(self, tokens: int) -> None:
        past, positions = self.fresh_past(tokens), self.state().next_positions(tokens)
        if max(self.lengths) + tokens > CAP:  # no room: this one is malformed too
            call = lambda: self.cache.append(past, positions)  # noqa: E731
            assert_rejected_unchanged(self.cache, call, ValueError, "positions")
            return
        self.cache.append(past, positions)
        for flat, tensor in enumerate(t for pair in past for t in pair):
            for b, length in enumerate(self.lengths):
                self.expected[flat][b, :, length : length + tokens] = tensor[b]
        self.lengths = [length + tokens for length in self.lengths]

    @precondition(lambda self: max(self.lengths) < CAP)
    @rule(data=st.data())
    def malformed_append(self, data: st.DataObject) -> None:
        # Only the one mistake may be wrong: the tokens themselves fit.
        tokens = data.draw(st.integers(1, min(2, CAP - max(self.lengths))))
        past, positions = self.fresh_past(tokens), self.state().next_positions(tokens)
        if data.draw(st.booleans()):
            bad = data.draw(broken_past(past, tokens, owner=self.cache))
            args = (bad.args[0], positions)
        else:
            bad = data.draw(broken_positions(self.state(), positions))
            args = (past, *bad.args) if len(bad.args) == 1 else bad.args
        call = lambda: self.cache.append(*args)  # noqa: E731
        assert_rejected_unchanged(self.cache, call, bad.error, bad.names)

    @rule(data=st.data())
    def load(self, data: st.DataObject) -> None:
        past, lengths, starts = data.draw(load_arguments(self.cache, broken=False)).args
        self.cache.load(past, lengths, starts)
        slots = past[0][0].shape[2]
        for flat, tensor in enumerate(t for pair in past for t in pair):
            self.expected[flat].zero_()
            for b, length in enumerate(lengths.tolist()):
                self.expected[flat][b, :, :length] = tensor[b, :, :length]
        assert slots <= CAP
        self.lengths, self.starts = lengths.tolist(), starts.tolist()

    @rule(data=st.data())
    def malformed_load(self, data: st.DataObject) -> None:
        bad = data.draw(load_arguments(self.cache))
        call = lambda: self.cache.load(*bad.args)  # noqa: E731
        assert_rejected_unchanged(self.cache, call, bad.error, bad.names)

    @rule(starts=st.lists(st.sampled_from([0, 2, 2**40]), min_size=B, max_size=B))
    def reset(self, starts: list[int]) -> None:
        self.cache.reset(long(starts))
        self.lengths, self.starts = [0] * B, starts

    @rule(bad=broken_start_positions())
    def malformed_reset(self, bad: Bad) -> None:
        call = lambda: self.cache.reset(*bad.args)  # noqa: E731
        assert_rejected_unchanged(self.cache, call, bad.error, bad.names)

    @invariant()
    def storage_matches_the_model(self) -> None:
        tensors = [tensor for pair in self.cache.storage for tensor in pair]
        assert [object_id(tensor) for tensor in tensors] == self.storage_ids, (
            "storage was rebound" + reported(tensors)
        )
        for index, (got, want) in enumerate(zip(tensors, self.expected, strict=True)):
            assert torch.equal(got, want), f"storage tensor {index} differs from the model"
        assert self.cache.cache_lengths.tolist() == self.lengths
        assert self.cache.cache_start_positions.tolist() == self.starts
        assert self.cache.logical_length == max(self.lengths)

    @invariant()
    def views_and_snapshots_agree(self) -> None:
        L = max(self.lengths)
        past, lengths, starts = self.cache.model_inputs()
        snapshot = self.cache.snapshot()
        if L == 0:
            assert (past, lengths, starts) == (None, None, None)
            return
        assert lengths.tolist() == self.lengths and starts.tolist() == self.starts
        for (key, value), (key_copy, value_copy), (stored_key, stored_value) in zip(
            past, snapshot, self.cache.storage, strict=True
        ):
            assert torch.equal(key, stored_key[:, :, :L]) and torch.equal(
                value, stored_value[:, :, :L]
            )
            assert torch.equal(key_copy, key) and torch.equal(value_copy, value)
            assert_other_memory(key_copy, stored_key, "snapshot is the storage, not a copy")


KVCacheMachine.TestCase.settings = boundary_settings(max_examples=15, stateful_step_count=10)
test_kv_cache_state_machine = KVCacheMachine.TestCase
