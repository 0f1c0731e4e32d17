"""Boundary suite: every malformed argument at every public door of cache_aware_lm.

Each test draws one call that is valid in every respect but one, from the entry
point's argument grammar, on both variants, and asserts the exception and that its
message names the argument: a wrong kind of object is a TypeError (the package's
ArgumentTypeError, also a ValueError as the contract promises), a bad value, shape,
dtype or size a ValueError and not a TypeError. Per-row rules are broken on the
second row; positions also with the int64 wraparound pair (2**63-1, -2**63). A
rejected ``serve_generate`` leaves the request storage and the model bit-for-bit as
they were; a rejected ``generate`` leaves the model so. Extension tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import Tensor

from gptlab_testkit import candidate, test_device
from gptlab_testkit.boundary import (
    INT64_MAX,
    INT64_MIN,
    assert_rejected_unchanged,
    assert_rejects,
    boundary_settings,
    like,
    malformed_shapes,
    not_an_int_or_bool,
    state_dict_cases,
    wrong_dtypes,
    wrong_kind_for_int,
    wrong_kind_for_sequence,
    wrong_kind_for_tensor,
)
from gptlab_testkit.models import cache_aware_modules

cam = candidate("CACHE_AWARE_LM_MODULE")
kvc = candidate("KV_CACHE_MODULE")
VARIANTS: dict[str, ModuleType] = cache_aware_modules()

pytestmark = [
    pytest.mark.extension,
    pytest.mark.skipif(
        not hasattr(cam, "validate_forward_inputs"), reason="this project's own helpers"
    ),
]

# (names the message may use, the call's changed keyword arguments, the exception type)
Case = tuple[tuple[str, ...], dict[str, Any], type[Exception]]

NOT_A_FLAG = (None, 1, 0, "yes", [True], torch.tensor(True))
NOT_A_FLOAT = (None, "0.1", [0.1], True, 1 + 0j, object())
HUGE = (2**62, INT64_MAX, 2**63, 2**64)


def check(case: Case, call: Callable[[dict[str, Any]], object]) -> BaseException:
    names, changes, kind = case
    error = assert_rejects(lambda: call(changes), kind, names)
    if kind is ValueError:
        assert not isinstance(error, TypeError), f"a bad value is no TypeError: {error!r}"
    return error


def kinds(name: str, strategy: st.SearchStrategy[object], *also: str) -> st.SearchStrategy[Case]:
    return strategy.map(lambda value: ((name, *also), {name: value}, TypeError))


def values(name: str, strategy: st.SearchStrategy[object], *also: str) -> st.SearchStrategy[Case]:
    return strategy.map(lambda value: ((name, *also), {name: value}, ValueError))


def not_none(strategy: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return strategy.filter(lambda value: value is not None)


def put(tensor: Tensor, value: int, where: tuple[int, ...]) -> Tensor:
    changed = tensor.clone()
    changed[where] = value
    return changed


def row_tensor_cases(
    name: str, tensor: Tensor, bad_values: tuple[int, ...], *also: str, optional: bool = False
) -> st.SearchStrategy[Case]:
    """A long [B, T] or [B] tensor: wrong kind, dtype or shape; a bad value on row 1."""
    shape = list(tensor.shape)
    wrong_kind = not_none(wrong_kind_for_tensor()) if optional else wrong_kind_for_tensor()
    where = (
        st.tuples(st.just(1), st.integers(0, shape[1] - 1)) if len(shape) == 2 else st.just((1,))
    )
    return st.one_of(
        kinds(name, wrong_kind),
        values(name, wrong_dtypes(torch.long).map(lambda d: like(tensor, dtype=d)), *also),
        values(name, malformed_shapes(shape).map(lambda s: like(tensor, shape=s)), *also),
        st.builds(
            lambda value, at: ((name, *also), {name: put(tensor, value, at)}, ValueError),
            st.sampled_from(bad_values),
            where,
        ),
    )


def position_cases(positions: Tensor, context: int) -> st.SearchStrategy[Case]:
    """Positions out of range anywhere on row 1, a jump inside it, or int64 wraparound."""
    wrapped = positions.clone()  # steps of one in wrapping int64 arithmetic
    T = positions.shape[1]
    wrapped[1] = torch.tensor([INT64_MAX, *(INT64_MIN + k for k in range(T - 1))])
    jump = positions.clone()
    jump[1, 1:] += 1
    return st.one_of(
        row_tensor_cases(
            "positions", positions, (-1, -2, context, context + 5, *HUGE[:2], INT64_MIN)
        ),
        st.sampled_from([wrapped, jump]).map(
            lambda p: (("positions",), {"positions": p}, ValueError)
        ),
    )


def pair_cases(pair: tuple, name: str, wrap: Callable[[object], object]) -> st.SearchStrategy[Case]:
    """One (key, value) pair wrong in one respect; ``wrap`` puts it back into the argument."""
    key = pair[0]
    B, H, S, D = key.shape

    def with_tensor(slot: int, tensor: object) -> object:
        changed = list(pair)
        changed[slot] = tensor
        return wrap(tuple(changed))

    def case(value: object, kind: type[Exception]) -> Case:
        return (name,), {name: value}, kind

    slot = st.integers(0, 1)
    return st.one_of(
        st.sampled_from([key, "kv", None]).map(lambda bad: case(wrap(bad), TypeError)),
        st.sampled_from([1, 3]).map(lambda n: case(wrap((key,) * n), ValueError)),
        st.builds(lambda j, v: case(with_tensor(j, v), TypeError), slot, wrong_kind_for_tensor()),
        st.builds(
            lambda j, shape: case(with_tensor(j, like(key, shape=shape)), ValueError),
            slot,
            malformed_shapes([B, H, None, D]) | st.just((B, H, S + 1, D)),
        ),
        st.builds(
            lambda j, dtype: case(with_tensor(j, like(key, dtype=dtype)), ValueError),
            slot,
            wrong_dtypes(key.dtype),
        ),
    )


def past_cases(past: tuple, name: str) -> st.SearchStrategy[Case]:
    def in_layer(index: int) -> Callable[[object], object]:
        return lambda layer: (*past[:index], layer, *past[index + 1 :])

    return st.one_of(
        kinds(name, not_none(wrong_kind_for_sequence())),
        values(name, st.sampled_from([past[:-1], (*past, past[0]), ()])),
        *(pair_cases(pair, name, in_layer(index)) for index, pair in enumerate(past)),
    )


@pytest.fixture(scope="module", params=list(VARIANTS), ids=list(VARIANTS))
def lm(request) -> ModuleType:
    return VARIANTS[request.param]


@pytest.fixture(scope="module")
def model(lm):
    return lm.make_test_model().to(test_device())


def rows(values_: list[list[int]]) -> Tensor:
    return torch.tensor(values_, dtype=torch.long, device=test_device())


# ---- forward -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def forward_call(model):
    """Rows at origins [0, 4] with 3 cached tokens each in storage padded to 6 slots;
    the call feeds 2 tokens at positions [3, 4] and [7, 8]."""
    with torch.no_grad():
        out = model(rows([[1, 2, 3], [4, 5, 6]]), rows([[0, 1, 2], [4, 5, 6]]), use_cache=True)
    past = tuple(
        tuple(torch.cat([t, torch.zeros_like(t)], dim=2) for t in pair)
        for pair in out.past_key_values
    )
    return {
        "input_ids": rows([[7, 8], [9, 10]]),
        "positions": rows([[3, 4], [7, 8]]),
        "past_key_values": past,
        "cache_lengths": out.cache_lengths.clone(),
        "cache_start_positions": out.cache_start_positions.clone(),
        "use_cache": True,
    }


def forward_cases(call: dict[str, Any], vocab: int, context: int) -> st.SearchStrategy[Case]:
    bad_ids = (-1, -2, vocab, vocab + 1, *HUGE[:2], INT64_MIN)
    gap = ("positions", "cache_start_positions", "cache_lengths")
    return st.one_of(
        row_tensor_cases("input_ids", call["input_ids"], bad_ids),
        position_cases(call["positions"], context),
        past_cases(call["past_key_values"], "past_key_values"),
        row_tensor_cases(
            "cache_lengths",
            call["cache_lengths"],
            (-1, 7, *HUGE[:2], INT64_MIN),
            *gap,
            optional=True,
        ),
        row_tensor_cases(
            "cache_start_positions",
            call["cache_start_positions"],
            (-1, *HUGE[:2], INT64_MIN),
            *gap,
            optional=True,
        ),
        st.sampled_from(["cache_lengths", "cache_start_positions"]).map(
            lambda name: ((name,), {name: None}, ValueError)
        ),
        kinds("use_cache", st.sampled_from(NOT_A_FLAG)),
    )


@pytest.fixture(scope="module")
def forward_strategy(model, forward_call):
    geometry = model.geometry
    return forward_cases(forward_call, geometry.vocab_size, geometry.context_length)


@pytest.mark.owner("cache_metadata")
@boundary_settings(30)
@given(data=st.data())
def test_forward_rejects_each_malformed_argument(model, forward_call, forward_strategy, data):
    with torch.no_grad():
        check(data.draw(forward_strategy), lambda changes: model(**{**forward_call, **changes}))


# ---- generate and serve_generate ------------------------------------------------------------


def request_cases(
    ids: Tensor, positions: Tensor, vocab: int, context: int
) -> st.SearchStrategy[Case]:
    return st.one_of(
        row_tensor_cases("input_ids", ids, (-1, vocab, *HUGE[:2], INT64_MIN)),
        position_cases(positions, context),
        kinds("max_new_tokens", wrong_kind_for_int()),
        values("max_new_tokens", st.sampled_from((-1, -2, INT64_MIN, context, *HUGE))),
        kinds("eos_token_id", st.one_of(st.booleans(), not_none(not_an_int_or_bool()))),
        values("eos_token_id", st.sampled_from((-1, -2, vocab, vocab + 1, *HUGE[:2], INT64_MIN))),
    )


@pytest.fixture(scope="module")
def generate_strategy(model):
    geometry = model.geometry
    prompt = rows([[1, 2, 3], [4, 5, 6]]), rows([[0, 1, 2], [5, 6, 7]])
    return prompt, request_cases(*prompt, geometry.vocab_size, geometry.context_length)


@pytest.mark.owner("cache_metadata")
@boundary_settings(20)
@given(data=st.data(), training=st.booleans())
def test_generate_rejects_each_malformed_argument_and_leaves_the_model(
    model, generate_strategy, data, training
):
    (ids, positions), strategy = generate_strategy
    model.train(training)
    try:
        names, changes, kind = data.draw(strategy)
        call = {"input_ids": ids, "positions": positions, "max_new_tokens": 2, **changes}
        error = assert_rejected_unchanged(model, lambda: model.generate(**call), kind, names)
        assert kind is not ValueError or not isinstance(error, TypeError), repr(error)
    finally:
        model.eval()


CAPACITY = 12


def filled_storage(model) -> Any:
    """Request storage with 3 cached tokens per row, rows at origins 0 and 3."""
    g = model.geometry
    storage = kvc.KVCache(
        g.n_layers, 2, g.n_kv_heads, CAPACITY, g.head_dim, device=test_device(),
        start_positions=rows([[0, 3]])[0],
    )  # fmt: skip
    prefix_positions = rows([[0, 1, 2], [3, 4, 5]])
    with torch.no_grad():
        out = model(rows([[1, 2, 3], [4, 5, 6]]), prefix_positions, use_cache=True)
    storage.append(out.past_key_values, prefix_positions)
    return storage


def as_namespace(source: Any, **changes: object) -> SimpleNamespace:
    """The storage's members as a plain object, with some replaced (any storage is duck-typed)."""
    members = {
        "storage": tuple(source.storage),
        "cache_lengths": source.cache_lengths,
        "cache_start_positions": source.cache_start_positions,
        "append": source.append,
    }
    return SimpleNamespace(**{**members, **changes})


def storage_cases(storage: Any) -> st.SearchStrategy[Case]:
    """The storage of the wrong kind, aliased, misshapen, or with bad lengths or starts."""
    layers = tuple(storage.storage)
    lengths, starts = storage.cache_lengths, storage.cache_start_positions

    def replaced(**changes: object) -> dict[str, object]:
        return {"storage": as_namespace(storage, **changes)}

    aliased = (*layers[:-1], (layers[-1][0], layers[-1][0]))
    across = ((layers[0][0], layers[0][1]), *((layers[0][0], v) for _, v in layers[1:]))
    return st.one_of(
        kinds("storage", st.sampled_from([None, {"storage": layers}, layers, object()])),
        st.sampled_from([aliased, across]).map(
            lambda s: (("storage",), replaced(storage=s), ValueError)
        ),
        past_cases(layers, "storage").map(
            lambda case: (case[0], replaced(storage=case[1]["storage"]), case[2])
        ),
        st.sampled_from([-1, CAPACITY + 1, INT64_MAX]).map(
            lambda v: (
                ("cache_lengths",),
                replaced(cache_lengths=put(lengths, v, (1,))),
                ValueError,
            )
        ),
        st.sampled_from([-1, 2**62, INT64_MAX]).map(
            lambda v: (
                ("cache_start_positions", "positions"),
                replaced(cache_start_positions=put(starts, v, (1,))),
                ValueError,
            )
        ),
        st.sampled_from(["cache_lengths", "cache_start_positions"]).map(
            lambda name: ((name,), replaced(**{name: [3, 3]}), TypeError)
        ),
        st.just((("storage", "max_new_tokens"), {"max_new_tokens": CAPACITY - 3}, ValueError)),
    )


@pytest.fixture(scope="module")
def serve_setup(model):
    geometry = model.geometry
    ids, positions = rows([[7, 8], [9, 10]]), rows([[3, 4], [6, 7]])
    strategy = st.one_of(
        request_cases(ids, positions, geometry.vocab_size, geometry.context_length),
        storage_cases(filled_storage(model)),
    )
    return ids, positions, strategy


@pytest.mark.owner("serving_decode")
@boundary_settings(25)
@given(data=st.data())
def test_serve_generate_rejects_each_malformed_argument_and_leaves_the_storage(
    model, serve_setup, data
):
    ids, positions, strategy = serve_setup
    names, changes, kind = data.draw(strategy)
    call = {
        "input_ids": ids,
        "positions": positions,
        "max_new_tokens": 3,
        "storage": filled_storage(model),
        **changes,
    }
    error = assert_rejected_unchanged(
        (call["storage"], model), lambda: cam.serve_generate(model, **call), kind, names
    )
    assert kind is not ValueError or not isinstance(error, TypeError), repr(error)


# ---- helpers in __all__ (variant-free: driven once, with the grouped-query model) ----------


@pytest.fixture(scope="module")
def gqa_model():
    modern = pytest.importorskip("cache_aware_lm.modern")
    return modern.make_test_model().to(test_device())


@pytest.fixture(scope="module")
def attention_inputs(gqa_model):
    """A valid mask and grouped-query attention call (rows at origins 0 and 4)."""
    g = gqa_model.geometry
    H = gqa_model.config.n_heads
    generator = torch.Generator().manual_seed(0)

    def randn(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=generator).to(test_device())

    mask_call = {
        "query_positions": rows([[3, 4], [7, 8]]),
        "key_starts": rows([[0, 4]])[0],
        "key_lengths": rows([[5, 5]])[0],
        "storage_length": 6,
    }
    mask = cam.absolute_position_mask(**mask_call)
    attention_call = {
        "query": randn(2, H, 2, g.head_dim),
        "keys": randn(2, g.n_kv_heads, 6, g.head_dim),
        "values": randn(2, g.n_kv_heads, 6, g.head_dim),
        "mask": mask,
    }
    # Built once: hypothesis caches a strategy's analysis on the object.
    strategies = {"mask": mask_cases(mask_call), "attention": attention_cases(attention_call)}
    return mask_call, attention_call, strategies


def mask_cases(call: dict[str, Any]) -> st.SearchStrategy[Case]:
    queries, starts, lengths = call["query_positions"], call["key_starts"], call["key_lengths"]
    return st.one_of(
        row_tensor_cases("query_positions", queries, (-1, 9, INT64_MAX, INT64_MIN)),
        row_tensor_cases("key_starts", starts, (-1, INT64_MIN), "query_positions"),
        row_tensor_cases(
            "key_lengths", lengths, (-1, 1, 7, INT64_MAX), "storage_length", "query_positions"
        ),
        kinds("storage_length", not_none(wrong_kind_for_int())),
        values("storage_length", st.sampled_from((-1, 0, 1, 4, *HUGE[:2])), "key_lengths"),
    )


@pytest.mark.owner("position_origins")
@boundary_settings(25)
@given(data=st.data())
def test_absolute_position_mask_rejects_each_malformed_argument(attention_inputs, data):
    call, _, strategies = attention_inputs
    case = data.draw(strategies["mask"])
    check(case, lambda changes: cam.absolute_position_mask(**{**call, **changes}))


def attention_cases(call: dict[str, Any]) -> st.SearchStrategy[Case]:
    def tensor(name: str, *also: str) -> st.SearchStrategy[Case]:
        value = call[name]
        return st.one_of(
            kinds(name, wrong_kind_for_tensor()),
            values(
                name, malformed_shapes(list(value.shape)).map(lambda s: like(value, shape=s)), *also
            ),
            values(name, wrong_dtypes(value.dtype).map(lambda d: like(value, dtype=d)), *also),
        )

    return st.one_of(
        tensor("query", "keys"), tensor("keys", "query"), tensor("values", "keys"), tensor("mask")
    )


@pytest.mark.owner("modern_architecture")
@boundary_settings(25)
@given(data=st.data(), folded=st.booleans())
def test_attention_kernels_reject_each_malformed_argument(attention_inputs, data, folded):
    _, call, strategies = attention_inputs
    kernel = cam.folded_grouped_query_attention if folded else cam.grouped_query_attention
    check(data.draw(strategies["attention"]), lambda changes: kernel(**{**call, **changes}))


@pytest.mark.owner("cache_metadata")
@boundary_settings(15)
@given(data=st.data())
def test_validate_forward_inputs_and_geometry_reject_malformed_arguments(gqa_model, data):
    geometry = gqa_model.geometry
    fields = dataclasses.asdict(geometry)
    sizes = ["vocab_size", "context_length", "n_layers", "n_kv_heads", "head_dim"]
    field_cases = st.one_of(
        *(kinds(name, wrong_kind_for_int()) for name in sizes),
        *(values(name, st.sampled_from((0, -1, INT64_MIN))) for name in sizes),
        kinds("dtype", st.sampled_from(("float32", torch.long, None))),
        kinds("device", st.sampled_from(("cpu", 0, None))),
    )
    names, changes, kind = data.draw(field_cases)
    check((names, changes, kind), lambda c: cam.ModelGeometry(**{**fields, **c}))
    inputs = {"input_ids": rows([[1]]), "positions": rows([[0]])}
    inputs.update(past_key_values=None, cache_lengths=None, cache_start_positions=None)
    bad_geometry = data.draw(st.sampled_from([fields, None, gqa_model]))
    assert_rejects(
        lambda: cam.validate_forward_inputs(**inputs, geometry=bad_geometry), TypeError, "geometry"
    )


@pytest.mark.owner("cache_metadata")
@boundary_settings(15)
@given(data=st.data())
def test_cache_writers_reject_malformed_arguments(gqa_model, data):
    with torch.no_grad():
        out = gqa_model(rows([[1, 2], [3, 4]]), rows([[0, 1], [4, 5]]), use_cache=True)
    past, lengths = out.past_key_values, out.cache_lengths
    slots = rows([[2], [2]])
    writer_cases = st.one_of(
        kinds("new_tokens", wrong_kind_for_int()),
        values("new_tokens", st.sampled_from((0, -1, INT64_MIN))),
        kinds("cache_lengths", wrong_kind_for_tensor()),
        values("cache_lengths", wrong_dtypes(torch.long).map(lambda d: like(lengths, dtype=d))),
        kinds("past", not_none(wrong_kind_for_sequence())),
        values("past", st.just(tuple((k[:1], v[:1]) for k, v in past))),
    )
    call = {"past": past, "cache_lengths": lengths, "new_tokens": 2}
    check(data.draw(writer_cases), lambda c: cam.FunctionalCacheWriter(**{**call, **c}))
    in_place_cases = st.one_of(
        kinds("attend_length", wrong_kind_for_int()),
        values("attend_length", st.sampled_from((0, -1, 3, INT64_MAX))),
        kinds("slots_BT", wrong_kind_for_tensor()),
        values("slots_BT", wrong_dtypes(torch.long).map(lambda d: like(slots, dtype=d))),
        kinds("storage", wrong_kind_for_sequence()),
    )
    call = {"storage": past, "slots_BT": slots, "attend_length": 2}
    check(data.draw(in_place_cases), lambda c: cam.InPlaceCacheWriter(**{**call, **c}))


# ---- configs, constructors and modern layers --------------------------------------------


MODERN_SIZES = (
    "vocab_size",
    "context_length",
    "d_model",
    "n_layers",
    "n_heads",
    "n_kv_heads",
    "d_ff",
)
BAD_MODERN_FLOATS = {
    "rms_norm_eps": (float("nan"), float("inf"), 0.0, -1.0, 1e-45, 5e-324, 1e39),
    "rope_theta": (float("nan"), float("inf"), 0.0, 0.5, -1.0, 1e-45, 1e39),
}
MODERN_CONFIG_CASES = st.one_of(
    *(kinds(name, wrong_kind_for_int()) for name in MODERN_SIZES),
    *(
        values(name, st.sampled_from((0, -1, INT64_MIN, *HUGE)), "d_model", "n_heads")
        for name in MODERN_SIZES
    ),
    values("n_kv_heads", st.sampled_from((3, 5, 8)), "n_heads"),
    *(kinds(name, st.sampled_from(NOT_A_FLOAT)) for name in BAD_MODERN_FLOATS),
    *(values(name, st.sampled_from(bad)) for name, bad in BAD_MODERN_FLOATS.items()),
)
RMS_NORM_CASES = st.one_of(
    kinds("dim", wrong_kind_for_int()),
    values("dim", st.sampled_from((0, -1))),
    kinds("rms_norm_eps", st.sampled_from(NOT_A_FLOAT)),
    values("rms_norm_eps", st.sampled_from(BAD_MODERN_FLOATS["rms_norm_eps"])),
)
ROTARY_CASES = st.one_of(
    kinds("head_dim", wrong_kind_for_int()),
    values("head_dim", st.sampled_from((0, -2, 7))),
    kinds("rope_theta", st.sampled_from(NOT_A_FLOAT)),
    values("rope_theta", st.sampled_from(BAD_MODERN_FLOATS["rope_theta"])),
)
ROTARY_CALL = {
    "x": torch.zeros(2, 4, 3, 8),
    "cos": torch.zeros(2, 1, 3, 8),
    "sin": torch.zeros(2, 1, 3, 8),
}
APPLY_ROTARY_CASES = st.one_of(
    *(kinds(name, wrong_kind_for_tensor()) for name in ROTARY_CALL),
    values(
        "x",
        st.sampled_from([(2, 4, 3, 7), (2, 4, 3), (2, 4, 2, 8)]).map(lambda s: torch.zeros(s)),
        "cos",
    ),
    values("cos", malformed_shapes([2, 1, 3, 8]).map(lambda s: torch.zeros(s))),
)


@pytest.mark.owner("modern_architecture")
@boundary_settings(30)
@given(data=st.data())
def test_modern_config_and_layers_reject_each_malformed_argument(gqa_model, data):
    modern = pytest.importorskip("cache_aware_lm.modern")
    valid = dataclasses.asdict(gqa_model.config)
    check(data.draw(MODERN_CONFIG_CASES), lambda c: modern.ModernConfig(**{**valid, **c}))
    check(data.draw(RMS_NORM_CASES), lambda c: modern.RMSNorm(**{"dim": 8, "eps": 1e-6, **_eps(c)}))
    check(data.draw(ROTARY_CASES), lambda c: modern.RotaryEmbedding(**_theta({"head_dim": 8, **c})))
    check(data.draw(APPLY_ROTARY_CASES), lambda c: modern.apply_rotary(**{**ROTARY_CALL, **c}))


def _eps(changes: dict[str, Any]) -> dict[str, Any]:
    """RMSNorm's argument is ``eps``; its message names the config field rms_norm_eps."""
    return {("eps" if name == "rms_norm_eps" else name): value for name, value in changes.items()}


def _theta(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "theta": 10000.0,
        **{("theta" if n == "rope_theta" else n): v for n, v in arguments.items()},
    }


@pytest.mark.owner("test_model_factories")
@boundary_settings(15)
@given(config=st.one_of(not_none(wrong_kind_for_sequence()), st.just({"vocab_size": 16})))
def test_models_reject_a_config_of_the_wrong_kind(config):
    modern = pytest.importorskip("cache_aware_lm.modern")
    assert_rejects(lambda: cam.CacheAwareCausalLM(config), TypeError, "config")
    assert_rejects(lambda: modern.ModernCacheAwareLM(config), TypeError, "config")
    assert_rejects(lambda: modern.llama_config_kwargs(config), TypeError, "config")


@pytest.mark.owner("test_model_factories")
@pytest.mark.parametrize(("field", "value"), [("gelu_approximate", "tanh"), ("dropout", 0.1)])
def test_reference_model_refuses_what_it_cannot_compute(field, value):
    config = cam.make_test_model().config
    changed = dataclasses.replace(config, **{field: value})
    assert_rejects(lambda: cam.CacheAwareCausalLM(changed), ValueError, field)


# ---- Llama converters (hand-built state dicts, no transformers) ---------------------------


@pytest.fixture(scope="module")
def llama_states():
    modern = pytest.importorskip("cache_aware_lm.modern")
    model = modern.make_test_model()
    ours = dict(model.state_dict())
    return modern, model.config, ours, modern.to_llama_state_dict(ours)


@pytest.mark.owner("llama_interop")
@boundary_settings(25)
@given(data=st.data(), with_config=st.booleans())
def test_from_llama_state_dict_names_the_malformed_key(llama_states, data, with_config):
    modern, config, _, llama = llama_states
    # Without a config the embedding and layer 0's k_proj and gate_proj size the model;
    # with it, every shape is pinned (and the layer count).
    sizing = (
        "model.embed_tokens.weight",
        "model.layers.0.self_attn.k_proj.weight",
        "model.layers.0.mlp.gate_proj.weight",
    )
    names, state, kind = data.draw(
        state_dict_cases(
            llama, lambda n: n, "model.layers.", lambda n: with_config or n not in sizing
        )
    )
    given_config = config if with_config else None
    check((names, {"s": state}, kind), lambda c: modern.from_llama_state_dict(c["s"], given_config))


@pytest.mark.owner("llama_interop")
@boundary_settings(25)
@given(data=st.data(), with_config=st.booleans())
def test_to_llama_state_dict_names_the_malformed_key(llama_states, data, with_config):
    modern, config, ours, _ = llama_states
    sizing = (
        "token_embedding.weight",
        "blocks.0.attention.k_proj.weight",
        "blocks.0.mlp.gate_proj.weight",
    )
    names, state, kind = data.draw(
        state_dict_cases(ours, lambda n: n, "blocks.", lambda n: with_config or n not in sizing)
    )
    given_config = config if with_config else None
    check((names, {"s": state}, kind), lambda c: modern.to_llama_state_dict(c["s"], given_config))


@pytest.mark.owner("llama_interop")
@boundary_settings(15)
@given(value=st.one_of(wrong_kind_for_sequence(), st.just([("lm_head.weight", torch.zeros(1))])))
def test_llama_converters_reject_a_state_dict_of_the_wrong_kind(llama_states, value):
    modern, _, ours, _ = llama_states
    assert_rejects(lambda: modern.from_llama_state_dict(value), TypeError, "state_dict")
    assert_rejects(lambda: modern.to_llama_state_dict(value), TypeError, "state_dict")
    if not isinstance(value, dict) and value is not None:
        assert_rejects(lambda: modern.to_llama_state_dict(ours, value), TypeError, "config")
