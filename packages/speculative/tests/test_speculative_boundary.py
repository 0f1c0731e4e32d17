"""Malformed arguments at every public door of speculative decoding (this project's extension).

Each case is valid in every respect but one argument, generated from that entry point's
argument grammar (one hypothesis test per argument, so each gets its own budget): the
wrong kind of object is a TypeError, a wrong value, shape, dtype or device a
ValueError, and the message names the argument. `DecodeState` is also compared bit for
bit before and after each rejected call.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptlab_testkit import candidate, test_device
from gptlab_testkit.boundary import (
    INT64_MAX,
    INT64_MIN,
    assert_rejected_unchanged,
    assert_rejects,
    boundary_settings,
    extreme_ints,
    like,
    malformed,
    malformed_shapes,
    not_callable,
    other_devices,
    tensor_cases,
    wrong_dtypes,
    wrong_kind_for_int,
    wrong_kind_for_sequence,
    wrong_kind_for_tensor,
)
from gptlab_testkit.models import cache_aware_modules

sd = candidate("SPECULATIVE_DECODING_MODULE")
MODULES = cache_aware_modules()

pytestmark = [pytest.mark.extension, pytest.mark.owner("speculative_validation")]

ORIGIN, PROMPT, BUDGET, WIDTH = 2, (3, 5, 7), 4, 2
EXAMPLES = 25  # per argument; most grammars are smaller and run out first
DEVICE = test_device()
TARGET = next(iter(MODULES.values())).make_test_model().to(DEVICE)


def _geometry(model):
    """(vocabulary, the first position the model refuses), asked of the model itself."""
    ids = torch.tensor([[1]], device=DEVICE)
    vocabulary = model(ids, torch.tensor([[0]], device=DEVICE)).logits.shape[-1]
    for position in range(4096):
        try:
            model(ids, torch.tensor([[position]], device=DEVICE))
        except (ValueError, IndexError, RuntimeError):  # a stranger need not name the error
            return vocabulary, position
    raise AssertionError("the model accepted every position below 4096")


VOCAB, CONTEXT = _geometry(TARGET)
DRAFT = copy.deepcopy(TARGET)  # rejected calls never run it far enough to change anything


def valid_request():
    return {
        "target": TARGET,
        "draft": DRAFT,
        "input_ids": torch.tensor([PROMPT], device=DEVICE),
        "positions": ORIGIN + torch.arange(len(PROMPT), device=DEVICE)[None],
        "max_new_tokens": BUDGET,
        "num_speculative_tokens": WIDTH,
        "eos_token_id": None,
    }


def not_none(values):
    return values.filter(lambda value: value is not None)


def on_other_devices(name, tensor):
    """Device cases where this machine has another device (none on a CPU-only host)."""
    others = [like(tensor, device=other) for other in other_devices(tensor.device)]
    return [malformed(name, st.sampled_from(others), ValueError)] if others else []


# ---- speculative_generate / speculative_sample ---------------------------------------------


def spoiled_row(base: list[int], values: st.SearchStrategy[int]):
    """One column (any, the first included: every column is checked) set to a bad value."""
    return st.tuples(st.integers(0, len(base) - 1), values).map(
        lambda spoil: [spoil[1] if index == spoil[0] else v for index, v in enumerate(base)]
    )


def bad_position_rows():
    T, base = len(PROMPT), [ORIGIN + index for index in range(len(PROMPT))]
    gap = st.tuples(st.integers(1, T - 1), st.sampled_from([1, -1, 5, 2**62, INT64_MIN])).map(
        lambda spoil: [v + (spoil[1] if index == spoil[0] else 0) for index, v in enumerate(base)]
    )
    wrapped = st.sampled_from(  # step 1 in int64 arithmetic at every column
        [[INT64_MAX - 1, INT64_MAX, INT64_MIN], [INT64_MAX, INT64_MIN, INT64_MIN + 1]]
    )
    shifted = st.sampled_from([-1, -T, INT64_MIN, 2**62, INT64_MAX - T + 1]).map(
        lambda start: [start + index for index in range(T)]
    )
    return st.one_of(gap, wrapped, shifted, st.just([ORIGIN + 2, ORIGIN + 9, ORIGIN + 4]))


def request_grammar():
    request = valid_request()
    ids, positions = request["input_ids"], request["positions"]
    fitting = CONTEXT - 1 - int(positions[0, -1])  # the largest budget that fits
    bad_ids = st.sampled_from([-1, -2, VOCAB, VOCAB + 1, 2**62, INT64_MAX, INT64_MIN])
    as_row = lambda row: torch.tensor([row], device=DEVICE)  # noqa: E731
    return {
        "target": [malformed("target", not_callable(), TypeError)],
        "draft": [malformed("draft", not_callable(), TypeError)],
        "input_ids": [
            *tensor_cases("input_ids", ids),
            malformed("input_ids", spoiled_row(list(PROMPT), bad_ids).map(as_row), ValueError),
        ],
        "positions": [
            *tensor_cases("positions", positions),
            malformed("positions", bad_position_rows().map(as_row), ValueError),
        ],
        "max_new_tokens": [
            malformed("max_new_tokens", wrong_kind_for_int(), TypeError),
            malformed("max_new_tokens", extreme_ints(minimum=0, maximum=fitting), ValueError),
        ],
        "num_speculative_tokens": [
            malformed("num_speculative_tokens", wrong_kind_for_int(), TypeError),
            malformed("num_speculative_tokens", extreme_ints(minimum=1), ValueError),
        ],
        "eos_token_id": [
            malformed("eos_token_id", not_none(wrong_kind_for_int()), TypeError),
            malformed("eos_token_id", extreme_ints(minimum=0, maximum=VOCAB - 1), ValueError),
        ],
    }


REQUEST = request_grammar()


def call(entry: str, request: dict[str, object]) -> object:
    if entry == "generate":
        return sd.speculative_generate(**request)
    generator = torch.Generator(device=DEVICE).manual_seed(0)
    return sd.speculative_sample(**request, temperature=1.0, generator=generator)


@pytest.mark.parametrize("entry", ["generate", "sample"])
@pytest.mark.parametrize("argument", list(REQUEST))
@boundary_settings(EXAMPLES)
@given(data=st.data())
def test_a_malformed_request_is_rejected_naming_the_argument(entry, argument, data):
    case = data.draw(st.one_of(*REQUEST[argument]), label=argument)
    request = valid_request() | {case.argument: case.value}
    error = assert_rejects(lambda: call(entry, request), case.error, case.argument)
    if case.argument != "max_new_tokens":
        # Only an over-long budget is a context overflow; nothing else may claim it is.
        assert "budget" not in str(error), f"misleading message: {error}"


def test_the_issues_positions_are_rejected():
    """Middle column out of step; step 1 in wrapping int64 arithmetic."""
    for row in ([2, 9, 4], [INT64_MAX - 1, INT64_MAX, INT64_MIN]):
        request = valid_request() | {"positions": torch.tensor([row], device=DEVICE)}
        assert_rejects(
            lambda request=request: sd.speculative_generate(**request), ValueError, "positions"
        )


@pytest.mark.parametrize("column", [0, 1, 2])
def test_an_id_beyond_the_vocabulary_is_not_reported_as_a_context_overflow(column):
    ids = torch.tensor([PROMPT], device=DEVICE)
    ids[0, column] = VOCAB
    request = valid_request() | {"input_ids": ids}
    error = assert_rejects(lambda: sd.speculative_generate(**request), ValueError, "input_ids")
    assert "context" not in str(error), f"misleading message: {error}"


SAMPLING = {
    "temperature": [
        malformed(
            "temperature",
            st.one_of(
                st.booleans(), st.sampled_from([None, "1.0", [1.0], {"t": 1.0}, 1 + 0j, object()])
            ),
            TypeError,
        ),
        malformed(
            "temperature",
            st.sampled_from([0, 0.0, -0.0, -1.0, -1e-45, math.nan, math.inf, -math.inf]),
            ValueError,
        ),
    ],
    "generator": [
        malformed(
            "generator",
            not_none(st.one_of(wrong_kind_for_tensor(), st.just(torch.tensor(0)))),
            TypeError,
        ),
        *[
            malformed("generator", st.just(torch.Generator(device=other)), ValueError)
            for other in other_devices(DEVICE)
        ],
    ],
}


@pytest.mark.parametrize("argument", list(SAMPLING))
@boundary_settings(EXAMPLES)
@given(data=st.data())
def test_a_malformed_sampling_argument_is_rejected_naming_it(argument, data):
    case = data.draw(st.one_of(*SAMPLING[argument]), label=argument)
    options = {"temperature": 1.0, "generator": None} | {case.argument: case.value}
    assert_rejects(
        lambda: sd.speculative_sample(**valid_request(), **options), case.error, case.argument
    )


@pytest.mark.parametrize("temperature", [1e-45, 5e-324])
def test_a_vanishing_temperature_samples_the_greedy_tokens(temperature):
    """softmax(logits / 1e-45) overflows unless shifted first; in the limit it is argmax."""
    request = valid_request()
    greedy = sd.speculative_generate(**request).tokens
    sampled = sd.speculative_sample(**request, temperature=temperature).tokens
    assert torch.equal(sampled, greedy)


def test_extreme_but_valid_request_values_are_accepted():
    request = valid_request() | {"num_speculative_tokens": 2**62, "eos_token_id": VOCAB - 1}
    out = sd.speculative_generate(**request)
    assert out.tokens.shape[1] <= len(PROMPT) + BUDGET
    flat = sd.speculative_sample(**valid_request(), temperature=1e308)
    assert flat.tokens.shape == (1, len(PROMPT) + BUDGET)


# ---- DecodeState: constructor, logits_from, rollback -------------------------------------


def fed_state() -> object:
    """A state that has cached the prompt and kept the logits after it."""
    state = sd.DecodeState(TARGET, ORIGIN, DEVICE)
    with torch.no_grad():
        state.logits_from(list(PROMPT), len(PROMPT))
    return state


ABSENT_DEVICES = [] if torch.cuda.is_available() else ["cuda", "cuda:0"]
CONSTRUCTOR = {
    "model": [malformed("model", not_callable(), TypeError)],
    "start_position": [
        malformed("start_position", wrong_kind_for_int(), TypeError),
        malformed("start_position", extreme_ints(minimum=0, maximum=INT64_MAX), ValueError),
    ],
    "device": [
        malformed("device", st.sampled_from([None, 0, 1.5, b"cpu", ["cpu"], {}]), TypeError),
        malformed(
            "device", st.sampled_from(["", "gpu", "cuda:x", "cpu:-1", *ABSENT_DEVICES]), ValueError
        ),
    ],
}


@pytest.mark.parametrize("argument", list(CONSTRUCTOR))
@boundary_settings(EXAMPLES)
@given(data=st.data())
def test_a_malformed_decode_state_is_refused(argument, data):
    case = data.draw(st.one_of(*CONSTRUCTOR[argument]), label=argument)
    arguments = {"model": TARGET, "start_position": ORIGIN, "device": DEVICE}
    arguments[case.argument] = case.value
    assert_rejects(lambda: sd.DecodeState(**arguments), case.error, case.argument)


EXTENDED = [*PROMPT, 1]  # a fed state can give rows len(PROMPT) .. len(EXTENDED)
LOGITS_FROM = {
    "sequence": [
        malformed(
            "sequence", st.one_of(wrong_kind_for_sequence(), st.just(tuple(EXTENDED))), TypeError
        ),
        malformed(
            "sequence",
            st.sampled_from([True, 1.0, "1", None, [1]]).map(lambda token: [*PROMPT, token]),
            TypeError,
        ),
        malformed(
            "sequence",
            st.sampled_from([-1, INT64_MIN, VOCAB, 2**62, INT64_MAX, 2**63]).map(
                lambda token: [*PROMPT, token]
            ),
            ValueError,
        ),
        malformed("sequence", st.just(list(PROMPT[:2])), ValueError),  # shorter than the cache
        malformed("sequence", st.just([*PROMPT] + [1] * CONTEXT), ValueError),  # past the context
    ],
    "index": [
        malformed("index", wrong_kind_for_int(), TypeError),
        malformed("index", extreme_ints(minimum=len(PROMPT), maximum=len(EXTENDED)), ValueError),
    ],
}


@pytest.mark.parametrize("argument", list(LOGITS_FROM))
@boundary_settings(EXAMPLES)
@given(data=st.data())
def test_a_malformed_logits_request_changes_nothing(argument, data):
    case = data.draw(st.one_of(*LOGITS_FROM[argument]), label=argument)
    arguments = {"sequence": EXTENDED, "index": len(PROMPT)} | {case.argument: case.value}
    state = fed_state()
    assert_rejected_unchanged(
        state, lambda: state.logits_from(**arguments), case.error, case.argument
    )


@boundary_settings(EXAMPLES)
@given(
    case=st.one_of(
        malformed("length", wrong_kind_for_int(), TypeError),
        malformed("length", extreme_ints(minimum=0, maximum=len(PROMPT)), ValueError),
    ),
    fed=st.booleans(),
)
def test_a_malformed_rollback_changes_nothing(case, fed):
    state = fed_state() if fed else sd.DecodeState(TARGET, ORIGIN, DEVICE)
    if not fed and case.error is ValueError and case.value == 0:
        return  # rolling an empty state back to 0 is valid
    assert_rejected_unchanged(state, lambda: state.rollback(case.value), case.error, "length")


def test_the_issues_rollback_to_minus_one_changes_nothing():
    state = fed_state()
    assert_rejected_unchanged(state, lambda: state.rollback(-1), ValueError, "length")
    assert state.length == len(PROMPT)


# ---- the rejection rule's helpers ----------------------------------------------------------

V = 8
P = torch.softmax(torch.linspace(-1.0, 1.0, V), dim=-1).to(DEVICE)
Q = torch.softmax(torch.linspace(1.0, -1.0, V), dim=-1).to(DEVICE)
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def spoiled_distribution(base):
    """One entry (never the first alone) made NaN, inf or negative, or the mass changed."""

    def spoil(choice):
        index, kind = choice
        result = base.clone()
        if kind == "scale":
            return result * 2.0
        if kind == "zero":
            return torch.zeros_like(result)
        result[index] = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "neg": -0.25}[kind]
        return result

    kinds = st.sampled_from(["nan", "inf", "-inf", "neg", "scale", "zero"])
    return st.tuples(st.integers(1, V - 1), kinds).map(spoil)


def distribution_grammar(name, base):
    return [
        malformed(name, wrong_kind_for_tensor(), TypeError),
        malformed(name, st.just(base.tolist()), TypeError),
        malformed(name, wrong_dtypes(FLOATS).map(lambda d: like(base, dtype=d)), ValueError),
        malformed(name, malformed_shapes((V,)).map(lambda s: like(base, shape=s)), ValueError),
        malformed(name, spoiled_distribution(base), ValueError),
        *on_other_devices(name, base),
    ]


RULE = {
    "p": distribution_grammar("p", P),
    "q": distribution_grammar("q", Q),
    "token": [
        malformed("token", wrong_kind_for_int(), TypeError),
        malformed("token", extreme_ints(minimum=0, maximum=V - 1), ValueError),
    ],
    "generator": [
        malformed("generator", not_none(st.one_of(wrong_kind_for_tensor(), st.just(P))), TypeError),
        *[
            malformed("generator", st.just(torch.Generator(device=other)), ValueError)
            for other in other_devices(DEVICE)
        ],
    ],
}
HELPERS = {
    "acceptance_probability": (("p", "q", "token"), lambda a: sd.acceptance_probability(**a)),
    "residual_distribution": (("p", "q"), lambda a: sd.residual_distribution(**a)),
    "rejection_step": (("p", "q", "token", "generator"), lambda a: sd.rejection_step(**a)),
}


@pytest.mark.parametrize(
    ("helper", "argument"),
    [(helper, argument) for helper, (names, _) in HELPERS.items() for argument in names],
)
@boundary_settings(EXAMPLES)
@given(data=st.data())
def test_a_malformed_rejection_argument_is_rejected_naming_it(helper, argument, data):
    names, function = HELPERS[helper]
    case = data.draw(st.one_of(*RULE[argument]), label=argument)
    valid = {"p": P, "q": Q, "token": 3, "generator": torch.Generator(device=DEVICE)}
    arguments = {name: valid[name] for name in names} | {case.argument: case.value}
    assert_rejects(lambda: function(arguments), case.error, case.argument)


@boundary_settings(EXAMPLES)
@given(
    dtype=st.sampled_from(FLOATS),
    logits=st.lists(st.floats(-30, 30), min_size=V, max_size=V),
    token=st.integers(0, V - 1),
)
def test_valid_distributions_of_every_float_dtype_are_accepted(dtype, logits, token):
    p = torch.softmax(torch.tensor(logits, dtype=torch.float64), dim=-1).to(dtype)
    q = torch.full((V,), 1.0 / V, dtype=dtype)
    assert 0.0 <= sd.acceptance_probability(p, q, token) <= 1.0
    assert sd.residual_distribution(p, q).shape == (V,)
    accepted, emitted = sd.rejection_step(p, q, token, torch.Generator().manual_seed(0))
    assert 0 <= emitted < V and (not accepted or emitted == token)
