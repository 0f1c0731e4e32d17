"""Malformed arguments at every public door of speculative decoding (this project's extension).

Each case is valid in every respect but one argument, generated from that entry point's
argument grammar: the wrong kind of object is a TypeError, a wrong value, shape, dtype
or device a ValueError, and the message names the argument. `DecodeState` is also
compared bit for bit before and after each rejected call.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

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
    malformed_shapes,
    other_devices,
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
EXAMPLES = 60


@dataclass(frozen=True)
class Case:
    """One argument replaced by a malformed value, and what the call must raise."""

    argument: str
    value: object
    error: type[Exception]


def cases(argument: str, values: st.SearchStrategy[object], error: type[Exception]):
    return values.map(lambda value: Case(argument, value, error))


TARGET = next(iter(MODULES.values())).make_test_model().to(test_device())


def _geometry(model):
    """(vocabulary, the first position the model refuses), asked of the model itself."""
    ids = torch.tensor([[1]], device=test_device())
    vocabulary = model(ids, torch.tensor([[0]], device=test_device())).logits.shape[-1]
    for position in range(4096):
        try:
            model(ids, torch.tensor([[position]], device=test_device()))
        except ValueError:
            return vocabulary, position
    raise AssertionError("the model accepted every position below 4096")


VOCAB, CONTEXT = _geometry(TARGET)


def valid_request():
    device = test_device()
    return {
        "target": TARGET,
        "draft": copy.deepcopy(TARGET),
        "input_ids": torch.tensor([PROMPT], device=device),
        "positions": ORIGIN + torch.arange(len(PROMPT), device=device)[None],
        "max_new_tokens": BUDGET,
        "num_speculative_tokens": WIDTH,
        "eos_token_id": None,
    }


# ---- the argument grammar of a request ---------------------------------------------------


def not_callable():
    return st.one_of(wrong_kind_for_tensor(), wrong_kind_for_sequence())


def columns(row_values: list[int]):
    """Index of a column to spoil: every column, the first one included, is checked."""
    return st.integers(0, len(row_values) - 1)


def spoiled_row(base: list[int], values: st.SearchStrategy[int]):
    return st.tuples(columns(base), values).map(
        lambda spoil: [spoil[1] if index == spoil[0] else v for index, v in enumerate(base)]
    )


def bad_position_rows():
    T, base = len(PROMPT), [ORIGIN + index for index in range(len(PROMPT))]
    gap = st.tuples(st.integers(1, T - 1), st.sampled_from([1, -1, 5, 2**62, INT64_MIN])).map(
        lambda spoil: [v + (spoil[1] if index == spoil[0] else 0) for index, v in enumerate(base)]
    )
    wrapped = st.sampled_from(
        [
            [INT64_MAX - 1, INT64_MAX, INT64_MIN],  # step 1 in int64 at every column
            [INT64_MAX, INT64_MIN, INT64_MIN + 1],
        ]
    )
    shifted = st.sampled_from([-1, -T, INT64_MIN, 2**62, INT64_MAX - T + 1]).map(
        lambda start: [start + index for index in range(T)]
    )
    return st.one_of(gap, wrapped, shifted, st.just([ORIGIN + 2, ORIGIN + 9, ORIGIN + 4]))


def request_cases():
    """Every malformed argument of speculative_generate (and the same seven of _sample)."""
    vocabulary, context = VOCAB, CONTEXT
    device = test_device()
    ids = torch.tensor([PROMPT], device=device)
    positions = ORIGIN + torch.arange(len(PROMPT), device=device)[None]
    fitting = context - 1 - int(positions[0, -1])  # the largest budget that fits
    tensor_device_cases = [
        cases(
            name,
            st.sampled_from([like(tensor, device=other) for other in other_devices(device)]),
            ValueError,
        )
        for name, tensor in (("input_ids", ids), ("positions", positions))
        if other_devices(device)
    ]
    return st.one_of(
        cases("target", not_callable(), TypeError),
        cases("draft", not_callable(), TypeError),
        cases("input_ids", wrong_kind_for_tensor(), TypeError),
        cases("input_ids", wrong_dtypes(torch.long).map(lambda d: like(ids, dtype=d)), ValueError),
        cases("input_ids", malformed_shapes((1, 3)).map(lambda s: like(ids, shape=s)), ValueError),
        cases(
            "input_ids",
            spoiled_row(
                list(PROMPT),
                st.sampled_from([-1, -2, vocabulary, vocabulary + 1, 2**62, INT64_MAX, INT64_MIN]),
            ).map(lambda row: torch.tensor([row], device=device)),
            ValueError,
        ),
        cases("positions", wrong_kind_for_tensor(), TypeError),
        cases(
            "positions",
            wrong_dtypes(torch.long).map(lambda d: like(positions, dtype=d)),
            ValueError,
        ),
        cases(
            "positions",
            malformed_shapes((1, 3)).map(lambda s: like(positions, shape=s)),
            ValueError,
        ),
        cases(
            "positions",
            bad_position_rows().map(lambda row: torch.tensor([row], device=device)),
            ValueError,
        ),
        cases("max_new_tokens", wrong_kind_for_int(), TypeError),
        cases("max_new_tokens", extreme_ints(minimum=0, maximum=fitting), ValueError),
        cases("num_speculative_tokens", wrong_kind_for_int(), TypeError),
        cases("num_speculative_tokens", extreme_ints(minimum=1), ValueError),
        cases("eos_token_id", wrong_kind_for_int().filter(lambda v: v is not None), TypeError),
        cases("eos_token_id", extreme_ints(minimum=0, maximum=vocabulary - 1), ValueError),
        *tensor_device_cases,
    )


def call(entry: str, request: dict[str, object]) -> object:
    if entry == "generate":
        return sd.speculative_generate(**request)
    generator = torch.Generator(device=test_device()).manual_seed(0)
    return sd.speculative_sample(**request, temperature=1.0, generator=generator)


@pytest.mark.parametrize("entry", ["generate", "sample"])
@boundary_settings(EXAMPLES)
@given(case=request_cases())
def test_a_malformed_request_is_rejected_naming_the_argument(entry, case):
    request = valid_request() | {case.argument: case.value}
    error = assert_rejects(lambda: call(entry, request), case.error, case.argument)
    if case.argument != "max_new_tokens":
        # Only an over-long budget is a context overflow; nothing else may claim it is.
        assert "budget" not in str(error), f"misleading message: {error}"


def test_the_issues_positions_are_rejected():
    """Middle column out of step; step 1 in wrapping int64 arithmetic."""
    for row in ([2, 9, 4], [INT64_MAX - 1, INT64_MAX, INT64_MIN]):
        request = valid_request() | {"positions": torch.tensor([row], device=test_device())}
        assert_rejects(
            lambda request=request: sd.speculative_generate(**request), ValueError, "positions"
        )


@pytest.mark.parametrize("column", [0, 1, 2])
def test_an_id_beyond_the_vocabulary_is_not_reported_as_a_context_overflow(column):
    ids = torch.tensor([PROMPT], device=test_device())
    ids[0, column] = VOCAB
    request = valid_request() | {"input_ids": ids}
    error = assert_rejects(lambda: sd.speculative_generate(**request), ValueError, "input_ids")
    assert "context" not in str(error), f"misleading message: {error}"


def sample_cases():
    device = test_device()
    foreign = [torch.Generator(device=other) for other in other_devices(device)]
    return st.one_of(
        cases(
            "temperature",
            st.one_of(
                st.booleans(),
                st.sampled_from([None, "1.0", [1.0], {"t": 1.0}, 1 + 0j, object()]),
            ),
            TypeError,
        ),
        cases(
            "temperature",
            st.sampled_from([0, 0.0, -0.0, -1.0, -1e-45, math.nan, math.inf, -math.inf]),
            ValueError,
        ),
        cases(
            "generator",
            st.one_of(wrong_kind_for_tensor(), st.just(torch.tensor(0))).filter(
                lambda value: value is not None
            ),
            TypeError,
        ),
        *([cases("generator", st.sampled_from(foreign), ValueError)] if foreign else []),
    )


@boundary_settings(EXAMPLES)
@given(case=sample_cases())
def test_a_malformed_sampling_argument_is_rejected_naming_it(case):
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
    state = sd.DecodeState(TARGET, ORIGIN, test_device())
    with torch.no_grad():
        state.logits_from(list(PROMPT), len(PROMPT))
    return state


def constructor_cases():
    absent = [] if torch.cuda.is_available() else ["cuda", "cuda:0"]
    return st.one_of(
        cases("model", not_callable(), TypeError),
        cases("start_position", wrong_kind_for_int(), TypeError),
        cases("start_position", extreme_ints(minimum=0, maximum=INT64_MAX), ValueError),
        cases(
            "device",
            st.one_of(
                st.sampled_from([None, 0, 1.5, b"cpu"]), st.lists(st.just("cpu"), max_size=1)
            ),
            TypeError,
        ),
        cases("device", st.sampled_from(["", "gpu", "cuda:x", "cpu:-1", *absent]), ValueError),
    )


@boundary_settings(EXAMPLES)
@given(case=constructor_cases())
def test_a_malformed_decode_state_is_refused(case):
    arguments = {"model": TARGET, "start_position": ORIGIN, "device": test_device()}
    arguments[case.argument] = case.value
    assert_rejects(lambda: sd.DecodeState(**arguments), case.error, case.argument)


def logits_from_cases():
    prompt, extended = list(PROMPT), [*PROMPT, 1]
    bad_tokens = st.one_of(
        cases(
            "sequence", st.one_of(wrong_kind_for_sequence(), st.just(tuple(extended))), TypeError
        ),
        cases(
            "sequence",
            st.one_of(st.booleans(), st.sampled_from([1.0, "1", None, [1]])).map(
                lambda token: [*prompt, token]
            ),
            TypeError,
        ),
        cases(
            "sequence",
            st.sampled_from([-1, INT64_MIN, VOCAB, 2**62, INT64_MAX, 2**63]).map(
                lambda token: [*prompt, token]
            ),
            ValueError,
        ),
        cases("sequence", st.just(prompt[:2]), ValueError),  # shorter than what is cached
        cases("sequence", st.just(prompt + [1] * CONTEXT), ValueError),  # past the context
    )
    return st.one_of(
        bad_tokens.map(lambda case: (case, len(PROMPT))),
        cases("index", wrong_kind_for_int(), TypeError).map(lambda case: (case, extended)),
        # a fed state gives rows len(PROMPT) .. len(extended)
        cases("index", extreme_ints(minimum=len(PROMPT), maximum=len(extended)), ValueError).map(
            lambda case: (case, extended)
        ),
    )


@boundary_settings(EXAMPLES)
@given(drawn=logits_from_cases())
def test_a_malformed_logits_request_changes_nothing(drawn):
    state = fed_state()
    case, other = drawn
    arguments = {"sequence": other, "index": other} | {case.argument: case.value}
    if case.argument == "sequence":
        arguments["index"] = len(PROMPT)
    assert_rejected_unchanged(
        state, lambda: state.logits_from(**arguments), case.error, case.argument
    )


def rollback_cases():
    return st.one_of(
        cases("length", wrong_kind_for_int(), TypeError),
        cases("length", extreme_ints(minimum=0, maximum=len(PROMPT)), ValueError),
    )


@boundary_settings(EXAMPLES)
@given(case=rollback_cases(), fed=st.booleans())
def test_a_malformed_rollback_changes_nothing(case, fed):
    state = fed_state() if fed else sd.DecodeState(TARGET, ORIGIN, test_device())
    if not fed and case.error is ValueError and case.value == 0:
        return  # rolling an empty state back to 0 is valid
    assert_rejected_unchanged(state, lambda: state.rollback(case.value), case.error, "length")


def test_the_issues_rollback_to_minus_one_changes_nothing():
    state = fed_state()
    assert_rejected_unchanged(state, lambda: state.rollback(-1), ValueError, "length")
    assert state.length == len(PROMPT)


# ---- the rejection rule's helpers ----------------------------------------------------------

V = 8
P = torch.softmax(torch.linspace(-1.0, 1.0, V), dim=-1).to(test_device())
Q = torch.softmax(torch.linspace(1.0, -1.0, V), dim=-1).to(test_device())


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


def distribution_cases(name, base):
    return st.one_of(
        cases(name, wrong_kind_for_tensor(), TypeError),
        cases(name, st.just(base.tolist()), TypeError),
        cases(
            name,
            wrong_dtypes([torch.float16, torch.bfloat16, torch.float32, torch.float64]).map(
                lambda dtype: like(base, dtype=dtype)
            ),
            ValueError,
        ),
        cases(name, malformed_shapes((V,)).map(lambda shape: like(base, shape=shape)), ValueError),
        cases(name, spoiled_distribution(base), ValueError),
        *[
            cases(name, st.just(like(base, device=other)), ValueError)
            for other in other_devices(test_device())
        ],
    )


def token_cases():
    return st.one_of(
        cases("token", wrong_kind_for_int(), TypeError),
        cases("token", extreme_ints(minimum=0, maximum=V - 1), ValueError),
    )


HELPERS = {
    "acceptance_probability": (("p", "q", "token"), lambda a: sd.acceptance_probability(**a)),
    "residual_distribution": (("p", "q"), lambda a: sd.residual_distribution(**a)),
    "rejection_step": (("p", "q", "token", "generator"), lambda a: sd.rejection_step(**a)),
}


def helper_cases(arguments):
    grammar = [distribution_cases("p", P), distribution_cases("q", Q)]
    if "token" in arguments:
        grammar.append(token_cases())
    if "generator" in arguments:
        foreign = [torch.Generator(device=other) for other in other_devices(test_device())]
        grammar.append(
            cases(
                "generator",
                st.one_of(wrong_kind_for_tensor(), st.just(P)).filter(lambda v: v is not None),
                TypeError,
            )
        )
        if foreign:
            grammar.append(cases("generator", st.sampled_from(foreign), ValueError))
    return st.one_of(*grammar)


@pytest.mark.parametrize("helper", list(HELPERS))
@boundary_settings(EXAMPLES)
@given(data=st.data())
def test_a_malformed_rejection_argument_is_rejected_naming_it(helper, data):
    names, function = HELPERS[helper]
    case = data.draw(helper_cases(names))
    valid = {"p": P, "q": Q, "token": 3, "generator": torch.Generator(device=test_device())}
    arguments = {name: valid[name] for name in names} | {case.argument: case.value}
    assert_rejects(lambda: function(arguments), case.error, case.argument)


@boundary_settings(EXAMPLES)
@given(
    dtype=st.sampled_from([torch.float16, torch.bfloat16, torch.float32, torch.float64]),
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
