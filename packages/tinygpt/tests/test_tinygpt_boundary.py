"""Boundary suite: every malformed argument at every public door of tinygpt.

Each test draws one call that is valid in every respect but one, from the entry
point's argument grammar (kinds, dtypes, shapes, values, the extremes 0, -1, 2**62,
the int64 edges, NaN, inf, 1e-45), and asserts that it is rejected with the right
exception, whose message names the argument:

- a wrong kind of object (a list for a tensor, a str for an int, a bool for a size)
  is a TypeError (tinygpt's ArgumentTypeError, also a ValueError: the contract
  promises ValueError for malformed arguments);
- a bad value, shape, dtype or size is a ValueError and not a TypeError.

A rejected ``generate`` leaves the model bit-for-bit as it was (weights and mode).
Stricter than the contract: extension tests. The converters are driven with state
dicts built by hand from a TinyGPT (no transformers import).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
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

tg = candidate("TINY_GPT_MODULE")

pytestmark = [pytest.mark.extension]

# (argument names the message may use, the malformed call's changed keyword arguments,
# the exception kind): one drawn case.
Case = tuple[tuple[str, ...], dict[str, Any], type[Exception]]

SIZE_FIELDS = ("vocab_size", "context_length", "d_model", "n_layers", "n_heads", "d_ff")
# Sizes that no config may hold: non-positive, or far beyond what any machine holds.
BAD_SIZES = (0, -1, -2, INT64_MIN, 2**62, INT64_MAX, 2**63, 2**64)
BAD_DROPOUTS = (float("nan"), float("inf"), -float("inf"), -1.0, -1e-45, 1.0, 1e308)
BAD_EPSILONS = (float("nan"), float("inf"), -float("inf"), 0.0, -0.0, -1.0, -1e-45)
NOT_A_FLOAT = (None, "0.1", [0.1], True, 1 + 0j, object())
BAD_TEMPERATURES = (
    float("nan"),
    float("inf"),
    -float("inf"),
    -1.0,
    -1e-45,
    1e-45,  # positive, but logits / 1e-45 overflows: refused below the smallest fp32 normal
    5e-324,
    1e-39,
    1e308,
)
NOT_A_FLAG = (None, 1, 0, "yes", [True], torch.tensor(True))
VALUE_ERROR_SETTINGS = boundary_settings(60)


def check(case: Case, call: Callable[[dict[str, Any]], object]) -> BaseException:
    names, changes, kind = case
    error = assert_rejects(lambda: call(changes), kind, names)
    if kind is ValueError:
        assert not isinstance(error, TypeError), f"a bad value is no TypeError: {error!r}"
    return error


def kinds(name: str, strategy: st.SearchStrategy[object]) -> st.SearchStrategy[Case]:
    return strategy.map(lambda value: ((name,), {name: value}, TypeError))


def values(name: str, strategy: st.SearchStrategy[object], *also: str) -> st.SearchStrategy[Case]:
    return strategy.map(lambda value: ((name, *also), {name: value}, ValueError))


def put(tensor: Tensor, value: int, where: tuple[int, int]) -> Tensor:
    """A copy of a [B, T] tensor with one entry set (dtype and device kept)."""
    changed = tensor.clone()
    changed[where] = value
    return changed


def later_entry(shape: torch.Size) -> st.SearchStrategy[tuple[int, int]]:
    """An entry off the first row when there is one (a per-row rule is tested past row 0)."""
    rows = range(1, shape[0]) if shape[0] > 1 else range(shape[0])
    return st.tuples(st.sampled_from(list(rows)), st.integers(0, shape[1] - 1))


# ---- GPTConfig ------------------------------------------------------------------------


def config_cases() -> st.SearchStrategy[Case]:
    sizes = [
        st.one_of(kinds(name, wrong_kind_for_int()), values(name, st.sampled_from(BAD_SIZES)))
        for name in SIZE_FIELDS
    ]
    return st.one_of(
        *sizes,
        values("n_layers", st.just(2**16 + 1)),
        kinds("dropout", st.sampled_from(NOT_A_FLOAT)),
        values("dropout", st.sampled_from(BAD_DROPOUTS)),
        kinds("layer_norm_eps", st.sampled_from(NOT_A_FLOAT)),
        values("layer_norm_eps", st.sampled_from(BAD_EPSILONS)),
        kinds("gelu_approximate", st.sampled_from((None, 1, True, ["tanh"], b"tanh"))),
        values("gelu_approximate", st.sampled_from(("exact", "", "TANH", "gelu_new"))),
    )


@pytest.mark.owner("config_validation")
@boundary_settings(50)
@given(case=config_cases(), through_replace=st.booleans())
def test_config_rejects_each_malformed_field(tiny_sizes, case, through_replace):
    """Construction and dataclasses.replace refuse it; huge sizes fail at once, naming the field."""
    valid = tg.GPTConfig(**tiny_sizes)

    def build(changes):
        if through_replace:
            return dataclasses.replace(valid, **changes)
        return tg.GPTConfig(**{**tiny_sizes, **changes})

    names, changes, kind = case
    if "n_heads" in changes or "d_model" in changes:
        names = ("d_model", "n_heads")  # divisibility names both
    check((names, changes, kind), build)


@pytest.mark.owner("registration")
@boundary_settings(12)
@given(config=st.one_of(wrong_kind_for_sequence(), st.just({"vocab_size": 32})))
def test_model_rejects_a_config_of_the_wrong_kind(config):
    assert_rejects(lambda: tg.TinyGPT(config), TypeError, "config")


# ---- forward ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def forward_call(shared_model, make_tokens):
    """A valid cached call: 2 rows, 3 cached tokens, 2 new tokens and their labels."""
    tokens = make_tokens(2, 5, seed=3)
    with torch.no_grad():
        past = shared_model(tokens[:, :3], use_cache=True).past_key_values
    return {"input_ids": tokens[:, 3:], "labels": tokens[:, 3:], "past_key_values": past}


def id_value_cases(name: str, ids: Tensor, vocab_size: int, *also: str) -> st.SearchStrategy[Case]:
    bad = (-1, -2, vocab_size, vocab_size + 1, 2**62, INT64_MAX, INT64_MIN)
    return st.builds(
        lambda value, where: ((name, *also), {name: put(ids, value, where)}, ValueError),
        st.sampled_from(bad),
        later_entry(ids.shape),
    )


def tensor_cases(
    name: str, tensor: Tensor, dtype: torch.dtype, optional: bool = False
) -> st.SearchStrategy[Case]:
    """Wrong kind, wrong dtype, wrong rank or an empty axis for a [B, T] tensor."""
    B, T = tensor.shape
    shapes = st.sampled_from([(B,), (B, T, 1), (1, B, T), (0, T), (B, 0)])
    wrong_kind = wrong_kind_for_tensor()
    if optional:  # None is the valid "not given"
        wrong_kind = wrong_kind.filter(lambda value: value is not None)
    return st.one_of(
        kinds(name, wrong_kind),
        values(name, wrong_dtypes(dtype).map(lambda d: like(tensor, dtype=d))),
        values(name, shapes.map(lambda shape: like(tensor, shape=shape))),
    )


def pair_cases(
    pair: tuple[Tensor, Tensor], name: str, wrap: Callable[[object], object]
) -> st.SearchStrategy[Case]:
    """One (key, value) pair wrong in one respect; ``wrap`` puts it where the call takes it."""
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
        st.sampled_from([list(pair), key, "kv"]).map(lambda bad: case(wrap(bad), TypeError)),
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


def past_cases(past: tuple, name: str = "past_key_values") -> st.SearchStrategy[Case]:
    """One cache, wrong in one respect: its kind, its layer count, or one layer's pair."""

    def in_layer(index: int) -> Callable[[object], object]:
        return lambda layer: (*past[:index], layer, *past[index + 1 :])

    wrong_cache = st.one_of(
        wrong_kind_for_sequence().filter(lambda value: value is not None), st.just(list(past))
    )
    layer = st.integers(0, len(past) - 1)
    return st.one_of(
        kinds(name, wrong_cache),
        values(name, st.sampled_from([past[:-1], (*past, past[0]), ()])),
        layer.map(lambda i: ((name,), {name: in_layer(i)(None)}, TypeError)),
        *(pair_cases(pair, name, in_layer(index)) for index, pair in enumerate(past)),
    )


def forward_cases(call: dict[str, Any], vocab_size: int, context: int) -> st.SearchStrategy[Case]:
    ids, labels = call["input_ids"], call["labels"]
    too_long = torch.zeros(1, context + 1, dtype=torch.long, device=ids.device)
    return st.one_of(
        tensor_cases("input_ids", ids, torch.long),
        id_value_cases("input_ids", ids, vocab_size),
        st.just(
            (
                ("input_ids", "context length"),
                {"input_ids": too_long, "labels": None, "past_key_values": None},
                ValueError,
            )
        ),
        tensor_cases("labels", labels, torch.long, optional=True),
        id_value_cases("labels", labels, vocab_size),
        past_cases(call["past_key_values"]),
        kinds("use_cache", st.sampled_from(NOT_A_FLAG)),
    )


@pytest.fixture(scope="module")
def forward_strategy(shared_model, forward_call):
    """Built once: hypothesis caches a strategy's analysis on the object."""
    config = shared_model.config
    return forward_cases(forward_call, config.vocab_size, config.context_length)


@pytest.mark.owner("cache_validation")
@boundary_settings(60)
@given(data=st.data())
def test_forward_rejects_each_malformed_argument(
    shared_model, forward_call, forward_strategy, data
):
    case = data.draw(forward_strategy)
    check(case, lambda changes: shared_model(**{**forward_call, **changes}))


@pytest.mark.owner("cache_validation")
def test_cached_context_overflow_names_the_context_length(shared_model, make_tokens):
    tokens = make_tokens(2, 17)
    with torch.no_grad():
        past = shared_model(tokens[:, :14], use_cache=True).past_key_values
    assert_rejects(
        lambda: shared_model(tokens[:, 14:], past_key_values=past), ValueError, "context length"
    )


# ---- generate ------------------------------------------------------------------------------


def generate_cases(prompt: Tensor, vocab_size: int) -> st.SearchStrategy[Case]:
    huge = (2**62, INT64_MAX, 2**63, 2**64, 17)
    return st.one_of(
        tensor_cases("input_ids", prompt, torch.long),
        id_value_cases("input_ids", prompt, vocab_size),
        kinds("max_new_tokens", wrong_kind_for_int()),
        values("max_new_tokens", st.sampled_from((-1, -2, INT64_MIN, *huge))),
        kinds("temperature", st.sampled_from(NOT_A_FLOAT)),
        values("temperature", st.sampled_from(BAD_TEMPERATURES)),
        kinds(
            "eos_token_id",
            st.one_of(st.booleans(), not_an_int_or_bool().filter(lambda v: v is not None)),
        ),
        values(
            "eos_token_id",
            st.sampled_from((-1, -2, vocab_size, vocab_size + 1, 2**62, INT64_MIN, INT64_MAX)),
        ),
        kinds("generator", st.sampled_from((1234, "seed", object(), [torch.Generator()]))),
    )


@pytest.fixture(scope="module")
def dropout_model(make_model):
    return make_model(seed=5, dropout=0.1)


@pytest.fixture(scope="module")
def prompt(make_tokens):
    return make_tokens(2, 3, seed=4)


@pytest.fixture(scope="module")
def generate_strategy(dropout_model, prompt):
    return generate_cases(prompt, dropout_model.config.vocab_size)


@pytest.mark.owner("eos_context")
@boundary_settings(40)
@given(data=st.data(), training=st.booleans())
def test_generate_rejects_each_malformed_argument_and_leaves_the_model(
    dropout_model, prompt, generate_strategy, data, training
):
    model = dropout_model.train(training)
    case = data.draw(generate_strategy)
    names, changes, kind = case
    arguments = {"input_ids": prompt, "max_new_tokens": 2, **changes}
    error = assert_rejected_unchanged(model, lambda: model.generate(**arguments), kind, names)
    if kind is ValueError:
        assert not isinstance(error, TypeError), f"a bad value is no TypeError: {error!r}"


@pytest.mark.owner("sampler_determinism")
@pytest.mark.parametrize("temperature", [1.2e-38, 1e-30, 1e-6])
def test_tiny_temperature_samples_the_argmax_without_nan(shared_model, make_tokens, temperature):
    """logits / temperature overflows to inf here; the draw is still the (unique) argmax."""
    prompt = make_tokens(2, 4, seed=9)
    generator = torch.Generator(device=test_device()).manual_seed(0)
    output = shared_model.generate(prompt, 1, temperature=temperature, generator=generator)
    with torch.no_grad():
        expected = shared_model(prompt).logits[:, -1].argmax(dim=-1)
    assert torch.equal(output[:, -1], expected)


# ---- a block's attention call --------------------------------------------------------------


def attention_cases(hidden: Tensor, past: tuple[Tensor, Tensor]) -> st.SearchStrategy[Case]:
    B, T, C = hidden.shape
    hidden_shapes = malformed_shapes([None, None, C]) | st.sampled_from([(0, T, C), (B, 0, C)])
    not_a_pair = wrong_kind_for_sequence().filter(lambda value: value is not None)
    return st.one_of(
        kinds("hidden_states", wrong_kind_for_tensor()),
        values("hidden_states", hidden_shapes.map(lambda s: like(hidden, shape=s))),
        values("hidden_states", wrong_dtypes(hidden.dtype).map(lambda d: like(hidden, dtype=d))),
        kinds("past_key_value", not_a_pair),
        pair_cases(past, "past_key_value", lambda pair: pair),
    )


@pytest.fixture(scope="module")
def attention_call(shared_model, make_tokens):
    """A valid call of block 1's attention (2 new hidden states after 3 cached tokens),
    and its strategy, built once (hypothesis caches its analysis on the object)."""
    tokens = make_tokens(2, 5, seed=6)
    with torch.no_grad():
        past = shared_model(tokens[:, :3], use_cache=True).past_key_values[1]
    hidden = torch.randn(
        2, 2, shared_model.config.d_model, generator=torch.Generator().manual_seed(1)
    )
    call = {"hidden_states": hidden.to(test_device()), "past_key_value": past}
    return call, attention_cases(call["hidden_states"], past)


@pytest.mark.owner("cache_validation")
@boundary_settings(40)
@given(data=st.data())
def test_attention_call_rejects_each_malformed_argument(shared_model, attention_call, data):
    call, strategy = attention_call
    attention = shared_model.blocks[1].attention
    with torch.no_grad():
        check(data.draw(strategy), lambda changes: attention(**{**call, **changes}))


# ---- GPT-2 converters --------------------------------------------------------------------

needs_converters = pytest.mark.skipif(
    not hasattr(tg, "from_gpt2_state_dict"), reason="the candidate ships no GPT-2 converter"
)


@pytest.fixture(scope="module")
def gpt2_state(shared_model):
    return tg.to_gpt2_state_dict(shared_model)


@needs_converters
@pytest.mark.owner("hf_interop")
@boundary_settings(40)
@given(data=st.data())
def test_from_gpt2_state_dict_names_the_malformed_key(shared_model, gpt2_state, data):
    case = data.draw(
        state_dict_cases(
            gpt2_state,
            lambda name: name.removeprefix("transformer."),
            "transformer.h.",
            lambda _: True,
        )
    )
    names, state, kind = case
    check(
        (names, {"state_dict": state}, kind),
        lambda c: tg.from_gpt2_state_dict(c["state_dict"], shared_model.config),
    )


@needs_converters
@pytest.mark.owner("hf_interop")
@boundary_settings(40)
@given(data=st.data())
def test_to_gpt2_state_dict_names_the_malformed_key(shared_model, data):
    # The embeddings and the first up_proj size the model, so their sizes are free;
    # every other tensor's shape follows from them.
    sizing = ("token_embedding.weight", "position_embedding.weight", "blocks.0.mlp.up_proj.weight")
    state = dict(shared_model.state_dict())
    case = data.draw(
        state_dict_cases(state, lambda name: name, "blocks.", lambda n: n not in sizing)
    )
    names, state, kind = case
    check((names, {"state": state}, kind), lambda c: tg.to_gpt2_state_dict(c["state"]))


@needs_converters
@pytest.mark.owner("hf_interop")
@boundary_settings(20)
@given(value=st.one_of(wrong_kind_for_sequence(), st.just([("wte.weight", torch.zeros(1))])))
def test_converters_reject_arguments_of_the_wrong_kind(shared_model, gpt2_state, value):
    config = shared_model.config
    assert_rejects(lambda: tg.from_gpt2_state_dict(value, config), TypeError, "state_dict")
    assert_rejects(lambda: tg.to_gpt2_state_dict(value), TypeError, "model_or_state_dict")
    if not isinstance(value, dict):
        assert_rejects(lambda: tg.from_gpt2_state_dict(gpt2_state, value), TypeError, "config")
        assert_rejects(lambda: tg.gpt2_config_kwargs(value), TypeError, "config")


@needs_converters
@pytest.mark.owner("hf_interop")
def test_config_with_more_layers_than_the_state_dict_names_the_missing_layer(
    shared_model, gpt2_state
):
    deeper = dataclasses.replace(shared_model.config, n_layers=shared_model.config.n_layers + 1)
    missing = f"h.{shared_model.config.n_layers}.ln_1.weight"
    assert_rejects(lambda: tg.from_gpt2_state_dict(gpt2_state, deeper), ValueError, missing)
