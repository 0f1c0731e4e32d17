"""Extension: every entry point's argument grammar, broken one rule at a time (hypothesis).

Each generated call is valid in every respect but one. It must raise TypeError (a
wrong kind of object) or ValueError (a wrong value, shape, dtype or device) whose
message names the argument, and leave the cache (entries, their order, every
counter) and a runner's model bit-for-bit as they were. A runner's prompt is
rejected before its lookup counts: a token the model does not know leaves no hit,
miss, recency change or reused token behind. The contract lists no prefix_cache
errors: these are this project's behaviour.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from gptlab_testkit import candidate, test_device
from gptlab_testkit.boundary import (
    INT64_MAX,
    INT64_MIN,
    assert_rejected_unchanged,
    assert_rejects,
    boundary_settings,
    like,
    malformed_shapes,
    other_devices,
    wrong_dtypes,
    wrong_kind_for_int,
    wrong_kind_for_sequence,
    wrong_kind_for_tensor,
)
from gptlab_testkit.models import cache_aware_modules

pc = candidate("PREFIX_CACHE_MODULE")

pytestmark = [pytest.mark.owner("prefix_cache_validation"), pytest.mark.extension]

DEVICE = test_device()
OTHER_DEVICES = other_devices(DEVICE)
NS = pc.PrefixCacheNamespace("model-a", "cache-0")
LAYERS, HEADS, HEAD_DIM = 2, 2, 3
BLOCK = 4
PROMPT = (3, 1, 4, 1, 5, 9, 2, 6, 5)  # two full blocks and a tail
EXAMPLES = boundary_settings(max_examples=45)


@dataclass
class Bad:
    """One malformed call: its arguments, the error it must raise, the names it may cite."""

    args: tuple[Any, ...]
    error: type[Exception]
    names: tuple[str, ...]


def entry_past(tokens: tuple[int, ...], start: int = 0) -> tuple[tuple[Any, Any], ...]:
    """Batch-1 K/V whose slot t holds 1000 * token + absolute position (distinct per prompt)."""
    T = len(tokens)
    ids = torch.tensor(tokens, dtype=torch.float32).reshape(1, 1, T, 1)
    where = torch.arange(start, start + T, dtype=torch.float32).reshape(1, 1, T, 1)
    slot = (1000 * ids + where).expand(1, HEADS, T, HEAD_DIM).to(DEVICE)
    return tuple((slot + layer, -slot - layer) for layer in range(LAYERS))


def populated_cache() -> Any:
    """A cache holding PROMPT's two blocks, after one hit and one miss."""
    prefix_cache = pc.PrefixCache(block_size=BLOCK, max_entries=4)
    prefix_cache.store(NS, PROMPT, entry_past(PROMPT))
    prefix_cache.store(NS, (7,) * BLOCK, entry_past((7,) * BLOCK))
    prefix_cache.lookup_longest(NS, PROMPT)
    prefix_cache.lookup_longest(NS, (0,) * BLOCK)
    return prefix_cache


# ---- argument grammars ---------------------------------------------------------------

WRONG_ID_KINDS = st.one_of(
    st.sampled_from([1.5, True, None, "1", (1,)]),
    st.just(torch.tensor(1.0)),
    st.lists(st.integers(0, 3), max_size=1),
)
BAD_IDS = [-1, INT64_MIN, 2**63, 2**64]


@st.composite
def broken_tokens(draw: st.DrawFn, name: str = "tokens") -> Bad:
    """`tokens` (a [1, T] integer tensor or a sequence of ints) broken in one way."""
    ids = list(PROMPT)
    at = draw(st.integers(0, len(ids) - 1))
    kind = draw(
        st.sampled_from(
            ["kind", "id kind", "id value", "tensor dtype", "tensor shape", "tensor id value"]
        )
    )
    if kind == "kind":
        wrong = st.one_of(wrong_kind_for_sequence(), st.just({0: 1}), st.just(b"ab"))
        return Bad((draw(wrong),), TypeError, (name,))
    if kind == "id kind":
        ids[at] = draw(WRONG_ID_KINDS)
        return Bad((ids,), TypeError, (name,))
    if kind == "id value":
        ids[at] = draw(st.sampled_from(BAD_IDS))
        return Bad((ids,), ValueError, (name,))
    tensor = torch.tensor([ids], dtype=torch.long, device=DEVICE)
    if kind == "tensor dtype":
        dtype = draw(st.sampled_from([torch.float32, torch.float16, torch.bool, torch.complex64]))
        return Bad((like(tensor, dtype=dtype),), ValueError, (name,))
    if kind == "tensor shape":
        shape = draw(malformed_shapes((1, None)))
        return Bad((like(tensor, shape=shape),), ValueError, (name,))
    tensor[0, at] = draw(st.sampled_from([-1, INT64_MIN]))
    return Bad((tensor,), ValueError, (name,))


@st.composite
def broken_past(draw: st.DrawFn, tokens: tuple[int, ...], exact: bool = False) -> Bad:
    """Batch-1 `past_key_values` for `tokens`, broken in one way."""
    past = entry_past(tokens)
    T = len(tokens)
    layer, index = draw(st.integers(0, LAYERS - 1)), draw(st.integers(0, 1))
    tensor = past[layer][index]
    kinds = ["kind", "empty", "pair kind", "pair length", "tensor kind", "rank", "batch"]
    kinds += ["too short", "not floating", "mixed dtype", "meta"] + ["exact"] * exact
    kinds += ["device"] * bool(OTHER_DEVICES)
    kind = draw(st.sampled_from(kinds))
    name = ("past_key_values",)

    def swap(new: Any) -> tuple[Any, ...]:
        pairs = [list(pair) for pair in past]
        pairs[layer][index] = new
        return tuple(tuple(pair) for pair in pairs)

    if kind == "kind":
        wrong = st.one_of(wrong_kind_for_sequence(), st.just(tensor))
        return Bad((draw(wrong),), TypeError, name)
    if kind == "empty":
        return Bad(((),), ValueError, name)
    if kind == "pair kind":
        pairs = list(past)
        pairs[layer] = draw(st.one_of(wrong_kind_for_sequence(), st.just(tensor)))
        return Bad((tuple(pairs),), TypeError, name)
    if kind == "pair length":
        pairs = list(past)
        pairs[layer] = draw(st.sampled_from([(tensor,), (tensor, tensor, tensor)]))
        return Bad((tuple(pairs),), ValueError, name)
    if kind == "tensor kind":
        return Bad((swap(draw(wrong_kind_for_tensor())),), TypeError, name)
    if kind == "rank":
        shape = draw(st.sampled_from([(HEADS, T, HEAD_DIM), (1, 1, HEADS, T, HEAD_DIM)]))
        return Bad((swap(like(tensor, shape=shape)),), ValueError, name)
    if kind == "batch":
        return Bad((swap(tensor.expand(2, HEADS, T, HEAD_DIM).clone()),), ValueError, name)
    if kind in ("too short", "exact"):
        slots = T - 1 if kind == "too short" else T + 1
        return Bad((swap(like(tensor, shape=(1, HEADS, slots, HEAD_DIM))),), ValueError, name)
    if kind == "not floating":
        dtype = draw(wrong_dtypes([torch.float16, torch.bfloat16, torch.float32, torch.float64]))
        if dtype.is_complex:
            dtype = torch.int64
        return Bad((swap(like(tensor, dtype=dtype)),), ValueError, name)
    if kind == "mixed dtype":
        return Bad((swap(like(tensor, dtype=torch.float64)),), ValueError, name)
    if kind == "meta":
        return Bad((swap(like(tensor, device="meta")),), ValueError, name)
    return Bad((swap(like(tensor, device=draw(st.sampled_from(OTHER_DEVICES)))),), ValueError, name)


def broken_int(name: str, minimum: int, none_ok: bool = False) -> st.SearchStrategy[Bad]:
    """An int argument of at least `minimum`: the wrong kind, or too small."""
    kinds = wrong_kind_for_int()
    if none_ok:
        kinds = kinds.filter(lambda value: value is not None)
    wrong_kind = kinds.map(lambda value: Bad((value,), TypeError, (name,)))
    too_small = st.sampled_from([minimum - 1, -1, INT64_MIN]).filter(lambda v: v < minimum)
    return st.one_of(wrong_kind, too_small.map(lambda value: Bad((value,), ValueError, (name,))))


def broken_start(tokens: int) -> st.SearchStrategy[Bad]:
    """`start_position`: the wrong kind, negative, or too late for the prompt to fit int64."""
    too_late = st.sampled_from([INT64_MAX - tokens + 2, INT64_MAX, 2**63, 2**64])
    late = too_late.map(lambda value: Bad((value,), ValueError, ("start_position",)))
    return st.one_of(broken_int("start_position", 0), late)


WRONG_NAMESPACES = st.one_of(
    st.sampled_from([("model-a", "cache-0"), "model-a", None, 0]),
    st.just({"model_id": "model-a", "cache_id": "cache-0"}),
).map(lambda value: Bad((value,), TypeError, ("namespace",)))


# ---- PrefixCache.store and lookup_longest ------------------------------------------------


@st.composite
def store_calls(draw: st.DrawFn) -> Bad:
    """store(namespace, tokens, past_key_values, start_position), broken in one argument."""
    args: list[Any] = [NS, PROMPT, entry_past(PROMPT), 0]
    target = draw(st.sampled_from(["namespace", "tokens", "past", "past", "start"]))
    if target == "namespace":
        bad = draw(WRONG_NAMESPACES)
    elif target == "tokens":
        bad = draw(broken_tokens())
    elif target == "past":
        bad = draw(broken_past(PROMPT))
    else:
        bad = draw(broken_start(len(PROMPT)))
    slot = {"namespace": 0, "tokens": 1, "past": 2, "start": 3}[target]
    args[slot] = bad.args[0]
    return Bad(tuple(args), bad.error, bad.names)


@given(bad=store_calls())
@EXAMPLES
def test_malformed_store_is_rejected_and_changes_nothing(bad):
    prefix_cache = populated_cache()
    call = lambda: prefix_cache.store(*bad.args)  # noqa: E731
    assert_rejected_unchanged(prefix_cache, call, bad.error, bad.names)


@st.composite
def lookup_calls(draw: st.DrawFn) -> Bad:
    """lookup_longest(namespace, tokens, start_position, max_length), broken once.

    The unbroken call would hit (PROMPT's 8-token entry), so a rejected one that
    counted anything would show."""
    args: list[Any] = [NS, PROMPT, 0, None]
    target = draw(st.sampled_from(["namespace", "tokens", "tokens", "start", "max_length"]))
    if target == "namespace":
        bad = draw(WRONG_NAMESPACES)
    elif target == "tokens":
        bad = draw(broken_tokens())
    elif target == "start":
        bad = draw(broken_start(len(PROMPT)))
    else:
        bad = draw(broken_int("max_length", 0, none_ok=True))
    args[["namespace", "tokens", "start", "max_length"].index(target)] = bad.args[0]
    return Bad(tuple(args), bad.error, bad.names)


@given(bad=lookup_calls())
@EXAMPLES
def test_malformed_lookup_is_rejected_and_counts_nothing(bad):
    prefix_cache = populated_cache()
    call = lambda: prefix_cache.lookup_longest(*bad.args)  # noqa: E731
    assert_rejected_unchanged(prefix_cache, call, bad.error, bad.names)


def test_the_unbroken_store_and_lookup_are_accepted():
    prefix_cache = populated_cache()
    prefix_cache.store(NS, PROMPT, entry_past(PROMPT), 0)
    match = prefix_cache.lookup_longest(NS, PROMPT, 0, None)
    assert match is not None and match.prefix_length == 2 * BLOCK


# ---- value types and small helpers ---------------------------------------------------------


@given(data=st.data())
@EXAMPLES
def test_malformed_value_objects_are_refused(data):
    """PrefixCacheNamespace, PrefixMatch, PrefixCacheStats, PrefixCache, reuse_cap."""
    entry = data.draw(st.sampled_from(["namespace", "match", "stats", "cache", "reuse_cap"]))
    if entry == "namespace":
        field = data.draw(st.sampled_from(["model_id", "cache_id"]))
        wrong = data.draw(
            st.one_of(
                st.sampled_from([None, 0, b"a", ["a"]]).map(lambda v: (v, TypeError)),
                st.just(("", ValueError)),
            )
        )
        fields = {"model_id": "m", "cache_id": "c", field: wrong[0]}
        assert_rejects(lambda: pc.PrefixCacheNamespace(**fields), wrong[1], field)
    elif entry == "match":
        tokens = PROMPT[: 2 * BLOCK]
        if data.draw(st.booleans()):
            bad = data.draw(broken_tokens())
            if isinstance(bad.args[0], torch.Tensor | list):  # a match holds a tuple
                bad = Bad(bad.args, TypeError, bad.names)
            args = (bad.args[0], entry_past(tokens))
        else:
            bad = data.draw(broken_past(tokens, exact=True))
            args = (tokens, bad.args[0])
        assert_rejects(lambda: pc.PrefixMatch(*args), bad.error, bad.names)
    elif entry == "stats":
        names = ["hits", "misses", "evictions", "reused_tokens", "entry_count"]
        names += ["stored_tokens", "kv_bytes"]
        field = data.draw(st.sampled_from(names))
        bad = data.draw(broken_int(field, 0))
        counters = {name: 1 for name in names} | {field: bad.args[0]}
        assert_rejects(lambda: pc.PrefixCacheStats(**counters), bad.error, bad.names)
    elif entry == "cache":
        field = data.draw(st.sampled_from(["block_size", "max_entries"]))
        bad = data.draw(broken_int(field, 1))
        sizes = {"block_size": 4, "max_entries": 4} | {field: bad.args[0]}
        assert_rejects(lambda: pc.PrefixCache(**sizes), bad.error, bad.names)
    else:
        field = data.draw(st.sampled_from(["prompt_length", "block_size"]))
        bad = data.draw(broken_int(field, 1))
        sizes = {"prompt_length": 9, "block_size": 4} | {field: bad.args[0]}
        assert_rejects(lambda: pc.reuse_cap(**sizes), bad.error, bad.names)


# ---- PrefixCachedRunner ------------------------------------------------------------------


@cache
def test_model() -> Any:
    return next(iter(cache_aware_modules().values())).make_test_model().to(DEVICE)


test_model.__test__ = False  # type: ignore[attr-defined]

RUNNER_PROMPT = (3, 1, 4, 1, 5, 9, 2, 6, 5)  # ids < 16, positions ORIGIN .. ORIGIN + 8 < 16
ORIGIN = 2


def prompt(tokens: tuple[int, ...] = RUNNER_PROMPT, origin: int = ORIGIN) -> tuple[Any, Any]:
    input_ids = torch.tensor([tokens], dtype=torch.long, device=DEVICE)
    positions = torch.arange(origin, origin + len(tokens), device=DEVICE).unsqueeze(0)
    return input_ids, positions


def warm_runner() -> Any:
    """A runner whose cache already holds the prompt's blocks: a lookup would hit."""
    runner = pc.PrefixCachedRunner(test_model(), pc.PrefixCache(BLOCK, max_entries=8), NS)
    runner.prefill(*prompt())
    return runner


@st.composite
def prefill_calls(draw: st.DrawFn) -> Bad:
    """prefill(input_ids, positions), broken in one argument."""
    input_ids, positions = prompt()
    T = input_ids.shape[1]
    target = draw(st.sampled_from(["input_ids", "positions"]))
    tensor = input_ids if target == "input_ids" else positions
    kinds = ["kind", "dtype", "shape", "length", "empty"] + ["device"] * bool(OTHER_DEVICES)
    kinds += ["id", "id", "out of vocabulary"] if target == "input_ids" else []
    kinds += ["cell", "cell", "wraparound", "negative", "beyond context"] * (target == "positions")
    kind = draw(st.sampled_from(kinds))
    error: type[Exception] = ValueError
    cited: tuple[str, ...] = (target,)
    at = draw(st.integers(0, T - 1))
    broken = tensor.clone()
    if kind == "kind":
        broken, error = draw(wrong_kind_for_tensor()), TypeError
    elif kind == "dtype":
        broken = like(tensor, dtype=draw(wrong_dtypes(torch.long)))
    elif kind == "shape":  # batch or rank
        broken = like(tensor, shape=draw(malformed_shapes((1, None))))
    elif kind == "length":  # the two disagree: either may be named
        broken, cited = tensor[:, : draw(st.integers(1, T - 1))], ("input_ids", "positions")
    elif kind == "empty":
        return Bad((input_ids[:, :0], positions[:, :0]), ValueError, ("input_ids", "positions"))
    elif kind == "device":
        broken = like(tensor, device=draw(st.sampled_from(OTHER_DEVICES)))
    elif kind == "id":
        broken[0, at] = draw(st.sampled_from([-1, INT64_MIN]))
    elif kind == "out of vocabulary":  # only the model knows its vocabulary
        broken[0, at] = draw(st.sampled_from([10**6, 2**40, INT64_MAX]))
    elif kind == "cell":  # every column is checked, not only the ends
        expected = int(tensor[0, at])
        choices = [expected - 1, expected + 1, expected + 5, 0, -1, INT64_MAX, INT64_MIN]
        broken[0, at] = draw(st.sampled_from([v for v in choices if v != expected]))
    elif kind == "wraparound":  # a step of one in wrapping int64 arithmetic
        at = min(at, T - 2)
        broken[0, at], broken[0, at + 1] = INT64_MAX, INT64_MIN
    elif kind == "negative":
        broken = tensor - draw(st.sampled_from([ORIGIN + 1, 2**40]))
    else:  # only the model knows its context length
        broken = tensor + draw(st.sampled_from([10**6, 2**40]))
    args = (broken, positions) if target == "input_ids" else (input_ids, broken)
    return Bad(args, error, cited)


@given(bad=prefill_calls())
@EXAMPLES
def test_malformed_prefill_is_rejected_before_the_lookup_counts(bad):
    runner = warm_runner()
    call = lambda: runner.prefill(*bad.args)  # noqa: E731
    assert_rejected_unchanged(runner, call, bad.error, bad.names)


def test_the_unbroken_prefill_hits_and_counts():
    runner = warm_runner()
    before = runner.cache.stats
    result = runner.prefill(*prompt())
    after = runner.cache.stats
    assert result.reused_tokens == 2 * BLOCK
    assert (after.hits, after.reused_tokens) == (before.hits + 1, before.reused_tokens + 2 * BLOCK)


@given(data=st.data())
@boundary_settings(max_examples=30)
def test_malformed_runner_arguments_are_refused(data):
    """The constructor, max_reused_tokens and the output value type."""
    runner = warm_runner()
    entry = data.draw(st.sampled_from(["model", "cache", "namespace", "max_reused", "output"]))
    if entry == "model":
        wrong = data.draw(st.sampled_from([None, 1, "model", [test_model()]]))
        assert_rejects(lambda: pc.PrefixCachedRunner(wrong, runner.cache, NS), TypeError, "model")
    elif entry == "cache":
        wrong = data.draw(st.sampled_from([None, {}, OrderedDict(), (BLOCK, 8)]))
        assert_rejects(lambda: pc.PrefixCachedRunner(test_model(), wrong, NS), TypeError, "cache")
    elif entry == "namespace":
        bad = data.draw(WRONG_NAMESPACES)
        call = lambda: pc.PrefixCachedRunner(test_model(), runner.cache, *bad.args)  # noqa: E731
        assert_rejects(call, bad.error, bad.names)
    elif entry == "max_reused":
        bad = data.draw(broken_int("prompt_length", 1))
        call = lambda: runner.max_reused_tokens(*bad.args)  # noqa: E731
        assert_rejected_unchanged(runner, call, bad.error, bad.names)
    else:
        result = runner.prefill(*prompt())
        fields = {
            "logits": result.logits,
            "logit_start": result.logit_start,
            "reused_tokens": result.reused_tokens,
            "past_key_values": result.past_key_values,
            "cache_lengths": result.cache_lengths,
            "cache_start_positions": result.cache_start_positions,
        }
        field = data.draw(st.sampled_from(sorted(fields)))
        if field in ("logit_start", "reused_tokens"):
            bad = data.draw(broken_int(field, 0))
            wrong, error, names = bad.args[0], bad.error, (field,)
        elif field == "past_key_values":
            wrong, error, names = None, TypeError, (field,)
        else:
            wrong, error, names = data.draw(wrong_kind_for_tensor()), TypeError, (field,)
        fields[field] = wrong
        assert_rejects(lambda: pc.PrefixPrefillOutput(**fields), error, names)


# ---- the cache as a state machine: valid and malformed calls interleaved -----------------

MACHINE_BLOCK, MACHINE_ENTRIES = 2, 4
NAMESPACES = (NS, pc.PrefixCacheNamespace("model-b", "cache-0"))
Key = tuple[Any, int, tuple[int, ...]]


class PrefixCacheMachine(RuleBasedStateMachine):
    """Random stores, lookups and clears, valid and malformed, against a plain model.

    The model is an OrderedDict of keys (namespace, start, prefix) in LRU order plus
    the counters. Lookups compare the returned match (tokens and K/V, which encode
    token ids and absolute positions) with the model's prediction, so a wrong
    eviction order, key or count shows; malformed calls must change nothing.
    """

    def __init__(self) -> None:
        super().__init__()
        self.cache = pc.PrefixCache(MACHINE_BLOCK, MACHINE_ENTRIES)
        self.entries: OrderedDict[Key, None] = OrderedDict()
        self.hits = self.misses = self.evictions = self.reused = 0
        self.bytes_per_token = sum(
            t.numel() * t.element_size() for pair in entry_past((0,)) for t in pair
        )

    @rule(
        namespace=st.sampled_from(NAMESPACES),
        start=st.sampled_from([0, 3]),
        tokens=st.lists(st.integers(0, 1), max_size=7).map(tuple),
    )
    def store(self, namespace: Any, start: int, tokens: tuple[int, ...]) -> None:
        self.cache.store(namespace, tokens, entry_past(tokens, start), start)
        for length in range(MACHINE_BLOCK, len(tokens) + 1, MACHINE_BLOCK):
            key = (namespace, start, tokens[:length])
            if key in self.entries:
                self.entries.move_to_end(key)
                continue
            self.entries[key] = None
            if len(self.entries) > MACHINE_ENTRIES:
                self.entries.popitem(last=False)
                self.evictions += 1

    @rule(
        namespace=st.sampled_from(NAMESPACES),
        start=st.sampled_from([0, 3]),
        tokens=st.lists(st.integers(0, 1), max_size=7).map(tuple),
        max_length=st.one_of(st.none(), st.integers(0, 8)),
    )
    def lookup(self, namespace: Any, start: int, tokens: tuple[int, ...], max_length: Any) -> None:
        match = self.cache.lookup_longest(namespace, tokens, start, max_length)
        limit = len(tokens) if max_length is None else min(len(tokens), max_length)
        limit -= limit % MACHINE_BLOCK
        for length in range(limit, 0, -MACHINE_BLOCK):
            key = (namespace, start, tokens[:length])
            if key in self.entries:
                self.entries.move_to_end(key)
                self.hits, self.reused = self.hits + 1, self.reused + length
                assert match is not None and match.tokens == tokens[:length]
                for got, want in zip(
                    match.past_key_values, entry_past(tokens[:length], start), strict=True
                ):
                    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
                return
        self.misses += 1
        assert match is None

    @rule()
    def clear(self) -> None:
        self.cache.clear()
        self.entries.clear()

    @rule(bad=store_calls())
    def malformed_store(self, bad: Bad) -> None:
        call = lambda: self.cache.store(*bad.args)  # noqa: E731
        assert_rejected_unchanged(self.cache, call, bad.error, bad.names)

    @rule(bad=lookup_calls())
    def malformed_lookup(self, bad: Bad) -> None:
        call = lambda: self.cache.lookup_longest(*bad.args)  # noqa: E731
        assert_rejected_unchanged(self.cache, call, bad.error, bad.names)

    @invariant()
    def counters_match_the_model(self) -> None:
        stats = self.cache.stats
        stored = sum(len(prefix) for _, _, prefix in self.entries)
        assert (stats.hits, stats.misses, stats.evictions) == (
            self.hits,
            self.misses,
            self.evictions,
        )
        assert stats.reused_tokens == self.reused
        assert stats.entry_count == self.cache.entry_count == len(self.entries)
        assert stats.stored_tokens == stored
        assert stats.kv_bytes == self.cache.kv_bytes == stored * self.bytes_per_token


PrefixCacheMachine.TestCase.settings = boundary_settings(max_examples=15, stateful_step_count=10)
test_prefix_cache_state_machine = PrefixCacheMachine.TestCase
