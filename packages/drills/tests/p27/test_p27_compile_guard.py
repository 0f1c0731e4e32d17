"""P27 compile_guard_probe(fn, inputs, *, dynamic, backend): compilations, call by call.

Every probe here compiles with a cheap backend ("eager": dynamo still traces, guards and
recompiles, but no code is generated), so the suite stays fast on CPU.
"""

from __future__ import annotations

import inspect
import math
import time

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P27_MODULE")

pytestmark = [pytest.mark.owner("p27")]  # each test says contract or extension

FIELDS = ("matches", "compiled", "compilations", "steady_seconds")


def probe(fn, inputs, **kwargs):
    """The candidate's report as a dict (it may return a mapping or an object)."""
    kwargs.setdefault("backend", "eager")
    report = drill.compile_guard_probe(fn, inputs, **kwargs)
    read = (lambda f: report[f]) if isinstance(report, dict) else (lambda f: getattr(report, f))
    out = {field: read(field) for field in FIELDS}
    out["matches"], out["compiled"] = list(out["matches"]), list(out["compiled"])
    assert len(out["matches"]) == len(out["compiled"]) == len(inputs), f"report {out}"
    assert all(isinstance(v, bool) for v in out["matches"] + out["compiled"]), f"report {out}"
    assert isinstance(out["compilations"], int) and not isinstance(out["compilations"], bool)
    steady = out["steady_seconds"]
    assert steady is None or isinstance(steady, float), f"steady_seconds {steady!r}"
    return out


def rows(*sizes: int, seed: int = 0) -> list[torch.Tensor]:
    return [seeded(n, 8, seed=seed + i) for i, n in enumerate(sizes)]


@pytest.mark.contract
@pytest.mark.clause("P27.2", "P27.3", "P27.8")
def test_compiled_outputs_equal_eager_for_a_pure_function():
    def pure(x):
        return torch.sin(x) * 2 + x.sum(-1, keepdim=True)

    report = probe(pure, rows(4, 4, 5))

    assert report["matches"] == [True, True, True]


@pytest.mark.contract
@pytest.mark.clause("P27.4", "P27.5")
def test_the_same_shape_reuses_the_first_compilation():
    def pure(x):
        return torch.tanh(x) - x.mean()

    report = probe(pure, rows(4, 4, 4), dynamic=False)

    assert report["compiled"] == [True, False, False]
    assert report["compilations"] == 1


@pytest.mark.contract
@pytest.mark.clause("P27.4", "P27.5")
def test_static_shapes_compile_once_per_new_shape_and_reuse_a_seen_one():
    def pure(x):
        return x.exp().cumsum(0)

    report = probe(pure, rows(4, 5, 4, 6), dynamic=False)

    assert report["compiled"] == [True, True, False, True]
    assert report["compilations"] == 3


@pytest.mark.contract
@pytest.mark.clause("P27.6")
def test_dynamic_shapes_compile_one_graph_for_every_size_of_two_or_more():
    def pure(x):
        return x.relu() * x.shape[0]

    report = probe(pure, rows(4, 5, 7), dynamic=True)

    assert report["compiled"] == [True, False, False]
    assert report["matches"] == [True, True, True]


@pytest.mark.contract
@pytest.mark.clause("P27.4")
def test_the_count_agrees_with_an_independent_counting_backend():
    from torch._dynamo.testing import CompileCounterWithBackend

    def pure(x):
        return (x * x).sum(-1)

    counter = CompileCounterWithBackend("eager")

    report = probe(pure, rows(3, 3, 6, 2), dynamic=False, backend=counter)

    assert report["compilations"] == counter.frame_count == sum(report["compiled"])


def off_by_one_backend(wrong_rows: int | None = None):
    """A backend whose graphs add 1 to a float output (only for inputs with `wrong_rows` rows,
    when given): what eager-vs-compiled comparison exists to catch."""

    def compile_graph(graph, example_inputs):
        def run(*args):
            outputs = graph(*args)
            first = next(a for a in args if isinstance(a, torch.Tensor))
            if wrong_rows is not None and first.shape[0] != wrong_rows:
                return outputs
            return type(outputs)(o + 1 if isinstance(o, torch.Tensor) else o for o in outputs)

        return run

    return compile_graph


@pytest.mark.contract
@pytest.mark.clause("P27.8")
def test_a_backend_that_changes_results_is_reported_as_not_matching():
    def pure(x):
        return x * 3

    report = probe(pure, rows(4, 4), backend=off_by_one_backend())

    assert report["matches"] == [False, False]


@pytest.mark.contract
@pytest.mark.clause("P27.8")
def test_each_call_is_compared_on_its_own():
    def pure(x):
        return x - 1

    report = probe(pure, rows(4, 5, 4), dynamic=False, backend=off_by_one_backend(wrong_rows=5))

    assert report["matches"] == [True, False, True]


@pytest.mark.contract
@pytest.mark.clause("P27.10")
def test_a_second_probe_starts_from_a_clean_compile_cache():
    def pure(x):
        return x.abs() + 1

    first = probe(pure, rows(4, 5), dynamic=False)
    second = probe(pure, rows(4, 5), dynamic=False)

    assert first["compiled"] == second["compiled"] == [True, True]


@pytest.mark.contract
@pytest.mark.clause("P27.9")
def test_warm_up_is_excluded_from_the_steady_state_time():
    def slow_backend(graph, example_inputs):
        time.sleep(0.45)  # a compiler this slow dominates any mean that includes it
        return graph

    def pure(x):
        return x + 1

    report = probe(pure, rows(4, 4, 4), backend=slow_backend)

    assert report["compiled"] == [True, False, False]
    # A mean over all three calls would be >= 0.15 s; two uncompiled calls take far less.
    assert report["steady_seconds"] is not None and 0 <= report["steady_seconds"] < 0.075


@pytest.mark.contract
@pytest.mark.clause("P27.9")
def test_no_steady_state_time_when_every_call_compiled():
    def pure(x):
        return x * x

    report = probe(pure, rows(2, 3), dynamic=False)

    assert report["compiled"] == [True, True]
    assert report["steady_seconds"] is None


@pytest.mark.contract
@pytest.mark.clause("P27.2", "P27.14")
def test_calls_with_several_arguments_and_inputs_left_unwritten():
    def pure(a, b):
        return a @ b.T + 1

    calls = [
        (seeded(3, 4, seed=1), seeded(5, 4, seed=2)),
        (seeded(3, 4, seed=3), seeded(5, 4, seed=4)),
    ]

    with inputs_untouched(
        **{f"inputs[{i}][{j}]": t for i, c in enumerate(calls) for j, t in enumerate(c)}
    ):
        report = probe(pure, calls)

    assert report["matches"] == [True, True]
    assert report["compiled"] == [True, False]


@pytest.mark.contract
@pytest.mark.clause("P27.5")
@settings(max_examples=5, deadline=None)
@given(sizes=st.lists(st.sampled_from([2, 3, 4]), min_size=1, max_size=4))
def test_under_static_shapes_a_call_compiles_exactly_when_its_shape_is_new(sizes):
    def pure(x):
        return x.sigmoid() * 2

    report = probe(pure, rows(*sizes), dynamic=False)

    new = [size not in sizes[:i] for i, size in enumerate(sizes)]
    assert report["compiled"] == new
    assert report["compilations"] == len(set(sizes))


# ---- rejection, before fn is called or compiled ----


@pytest.mark.contract
@pytest.mark.clause("P27.1", "P27.5")
def test_fn_and_inputs_bind_positionally_and_dynamic_defaults_to_static_shapes():
    signature = inspect.signature(drill.compile_guard_probe)
    try:
        signature.bind(abs, [])
    except TypeError as error:
        raise AssertionError(f"compile_guard_probe{signature} cannot take (fn, inputs)") from error

    def pure(x):
        return x * 2 - 1

    report = probe(pure, rows(4, 5, 7))  # no dynamic: False, one graph per new shape

    assert report["compiled"] == [True, True, True]


@pytest.mark.contract
@pytest.mark.clause("P27.7")
def test_dynamic_none_compiles_static_first_then_one_generic_graph():
    def pure(x):
        return x.cos() + x.shape[0]

    report = probe(pure, rows(4, 5, 7, 4), dynamic=None)

    assert report["compiled"] == [True, True, False, False]
    assert report["compilations"] == 2
    assert report["matches"] == [True] * 4


@pytest.mark.contract
@pytest.mark.clause("P27.7")
def test_dynamic_none_recompiles_where_dynamic_false_reuses_nothing_new():
    def pure(x):
        return x.square().sum(0)

    static = probe(pure, rows(3, 6, 9), dynamic=False)
    default = probe(pure, rows(3, 6, 9), dynamic=None)

    assert static["compilations"] == 3 and static["compiled"] == [True, True, True]
    assert default["compilations"] == 2 and default["compiled"] == [True, True, False]


def reshaping_backend(change):
    """A backend whose graphs return every tensor output changed by `change` (values kept)."""

    def compile_graph(graph, example_inputs):
        def run(*args):
            outputs = graph(*args)
            return type(outputs)(change(o) if isinstance(o, torch.Tensor) else o for o in outputs)

        return run

    return compile_graph


@pytest.mark.contract
@pytest.mark.clause("P27.8")
@pytest.mark.parametrize(
    "change",
    [lambda o: o.unsqueeze(0), lambda o: o.double(), lambda o: o.reshape(-1)],
    ids=["an extra leading dim (broadcasts)", "float64 for float32", "flattened"],
)
def test_an_output_of_another_shape_or_dtype_does_not_match(change):
    def pure(x):
        return x * 3 + 1

    report = probe(pure, rows(4, 4), backend=reshaping_backend(change))

    assert report["matches"] == [False, False]


@pytest.mark.contract
@pytest.mark.clause("P27.8")
def test_the_tolerances_decide_a_near_miss():
    def pure(x):
        return x * 2

    near = reshaping_backend(lambda o: o + 1e-3)
    loose = probe(pure, rows(4, 4), backend=near, atol=1e-2, rtol=0.0)
    tight = probe(pure, rows(4, 4), backend=near, atol=1e-4, rtol=0.0)

    assert loose["matches"] == [True, True] and tight["matches"] == [False, False]


@pytest.mark.contract
@pytest.mark.clause("P27.10")
def test_probing_one_function_again_and_again_gives_the_same_report():
    # Without a reset the cache grows by two graphs per probe and, past dynamo's limit of
    # eight, the later probes would compile nothing at all.
    def pure(x):
        return x.abs() * 3

    reports = [probe(pure, rows(4, 5, seed=i), dynamic=False) for i in range(5)]

    assert [r["compiled"] for r in reports] == [[True, True]] * 5
    assert [r["compilations"] for r in reports] == [2] * 5


# ---- extension: the reference's doors past the contract ----


@pytest.mark.extension
@pytest.mark.clause("P27.15")
@pytest.mark.parametrize(
    ("keyword", "value", "errors"),
    [
        ("atol", "1e-5", WRONG_KIND),
        ("rtol", math.nan, BAD_VALUE),
        ("atol", -1.0, BAD_VALUE),
        ("rtol", math.inf, BAD_VALUE),
        ("dynamic", 1, WRONG_KIND),
        ("inputs", [torch.empty(2, 8, device="meta")], BAD_VALUE),
    ],
    ids=["a string atol", "NaN rtol", "negative atol", "infinite rtol", "dynamic 1", "meta"],
)
def test_the_reference_rejects_what_the_contract_leaves_undefined(keyword, value, errors):
    ran = []

    def pure(x):
        ran.append(1)
        return x + 1

    kwargs = {"backend": "eager", keyword: value}
    inputs = kwargs.pop("inputs", rows(2))
    assert_rejects(lambda: drill.compile_guard_probe(pure, inputs, **kwargs), errors, keyword)
    assert not ran, f"fn ran before {keyword} was rejected"


@pytest.mark.contract
@pytest.mark.clause("P27.6")
def test_dynamic_true_shares_one_graph_across_sizes_and_specialises_size_one():
    def pure(a, b):
        return a * b.sum()

    sizes = [(3, 2), (8, 5), (2, 7), (6, 1)]
    calls = [(seeded(n, 4, seed=n), seeded(m, 4, seed=m + 10)) for n, m in sizes]

    report = probe(pure, calls, dynamic=True)

    # b with one row is specialised: a second graph for the last call only.
    assert report["compiled"] == [True, False, False, True]
    assert report["compilations"] == 2


@pytest.mark.contract
@pytest.mark.clause("P27.1")
def test_the_backend_defaults_to_inductor():
    # Read from the signature: running inductor needs a C++ compiler and minutes on a CPU.
    parameter = inspect.signature(drill.compile_guard_probe).parameters.get("backend")

    assert parameter is not None, "compile_guard_probe takes no backend"
    assert parameter.default == "inductor", f"backend defaults to {parameter.default!r}"


@pytest.mark.contract
@pytest.mark.clause("P27.1")
def test_a_call_without_a_backend_looks_up_a_backend_torch_knows():
    # A function that returns its input makes no graph: the default backend is looked up
    # (a misspelt one raises) but never run, so inductor costs its import, not a compile.
    def unchanged(x):
        return x

    report = drill.compile_guard_probe(unchanged, [torch.ones(2)])
    matches = report["matches"] if isinstance(report, dict) else report.matches

    assert list(matches) == [True], f"report {report}"


@pytest.mark.contract
@pytest.mark.clause("P27.1", "P27.8")
def test_the_default_tolerances_are_1e_5():
    def pure(x):
        return x + 4.0

    coarse = probe(pure, rows(4, 4), backend=reshaping_backend(lambda o: o * (1 + 1e-3)))
    fine = probe(pure, rows(4, 4), backend=reshaping_backend(lambda o: o * (1 + 1e-7)))

    assert coarse["matches"] == [False, False], "a relative error of 1e-3 passed the defaults"
    assert fine["matches"] == [True, True], "a relative error of 1e-7 failed the defaults"


@pytest.mark.contract
@pytest.mark.clause("P27.8")
def test_rtol_scales_with_the_eager_value():
    def pure(x):
        return x * 0 + 100.0

    near = reshaping_backend(lambda o: o * (1 + 1e-3))
    loose = probe(pure, rows(3, 3), backend=near, atol=0.0, rtol=1e-2)
    tight = probe(pure, rows(3, 3), backend=near, atol=0.0, rtol=1e-4)

    assert loose["matches"] == [True, True] and tight["matches"] == [False, False]


@pytest.mark.contract
@pytest.mark.clause("P27.4")
def test_the_backend_compiles_each_graph_from_the_calls_example_inputs():
    seen = []

    def recording_backend(graph, example_inputs):
        seen.append([tuple(t.shape) for t in example_inputs if isinstance(t, torch.Tensor)])
        return graph

    def pure(x):
        return x.tanh()

    report = probe(pure, rows(3, 3, 5), dynamic=False, backend=recording_backend)

    assert report["compiled"] == [True, False, True]
    assert seen == [[(3, 8)], [(5, 8)]], f"example inputs given to the backend: {seen}"


@pytest.mark.contract
@pytest.mark.clause("P27.9")
def test_steady_seconds_is_the_mean_of_the_steady_calls():
    def sleepy_backend(graph, example_inputs):
        def run(*args):
            time.sleep(0.05)
            return graph(*args)

        return run

    def pure(x):
        return x - 2

    report = probe(pure, rows(4, 4, 4, 4), backend=sleepy_backend)

    assert report["compiled"] == [True, False, False, False]
    # Each steady call sleeps 0.05 s: their mean is about that; a sum would be 0.15 s.
    assert 0.05 <= report["steady_seconds"] < 0.12, f"steady_seconds {report['steady_seconds']}"
