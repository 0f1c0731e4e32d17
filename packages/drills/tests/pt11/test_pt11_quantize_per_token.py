"""PT11 quantize_per_token(x [*N, D]) -> (q int8 [*N, D], scales fp32 [*N, 1]); a dequant ref."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT11_MODULE")

pytestmark = [pytest.mark.owner("pt11"), pytest.mark.contract]

FLOATS = [torch.float32, torch.float16, torch.bfloat16]
TINY = torch.finfo(torch.float32).tiny


def tensor(rows, dtype=torch.float32) -> torch.Tensor:
    return torch.tensor(rows, dtype=dtype, device=test_device())


def quantize(x: torch.Tensor):
    """A valid call: a refusal from it is a failed check, not a crash."""
    try:
        result = drill.quantize_per_token(x)
    except (ValueError, TypeError, RuntimeError) as error:
        raise AssertionError(f"a valid x was refused: {type(error).__name__}: {error}") from error
    assert isinstance(result, tuple) and len(result) == 2, "not a (q, scales) pair"
    return result


def row_oracle(row: list[float]) -> float:
    """The row's scale, from its values as float32 numbers (a Python loop)."""
    amax = max((abs(v) for v in row), default=0.0)
    return 1.0 if amax == 0 else max(amax / 127, TINY)


def check(x: torch.Tensor, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    # the oracle first: the call's writes cannot reach it
    x_given = x.clone()
    q, scales = quantize(x)
    lead = tuple(x.shape[:-1])
    assert tuple(q.shape) == tuple(x.shape), f"{what}: q {tuple(q.shape)}"
    assert tuple(scales.shape) == (*lead, 1), f"{what}: scales {tuple(scales.shape)}"
    assert q.dtype == torch.int8 and scales.dtype == torch.float32, (
        f"{what}: {q.dtype}, {scales.dtype}"
    )
    assert q.device == x.device and scales.device == x.device
    assert int(q.min()) >= -127 if q.numel() else True, f"{what}: -128 used"
    assert bool((scales > 0).all()), f"{what}: a scale is not positive: {scales.flatten().tolist()}"
    wide = x_given.float().reshape(-1, x.shape[-1])
    flat_q, flat_s = q.reshape(-1, x.shape[-1]), scales.reshape(-1)
    for n, row in enumerate(wide.tolist()):
        want = row_oracle(row)
        got = float(flat_s[n])
        assert abs(got - want) <= 2e-7 * want, f"{what}: row {n} scale {got}, absmax/127 = {want}"
        error = (flat_q[n].double() * got - wide[n].double()).abs().max() if row else 0.0
        assert error <= 0.5 * got * (1 + 1e-5), f"{what}: row {n} off by {float(error)} > scale/2"
        if max(map(abs, row), default=0.0) / 127 >= TINY:
            assert int(flat_q[n].abs().max()) == 127, f"{what}: row {n}'s absmax is not +-127"
    return q, scales


@pytest.mark.clause("PT11.1")
def test_the_functions_take_their_arguments_by_position_and_name():
    x = seeded(3, 5, seed=1)
    assert_binds(drill.quantize_per_token, x)
    assert_binds(drill.quantize_per_token, x=x)
    q, scales = drill.quantize_per_token(x=x)
    assert_binds(drill.dequantize_per_token, q, scales)
    assert_binds(drill.dequantize_per_token, q=q, scales=scales)
    by_name = drill.dequantize_per_token(scales=scales, q=q)
    assert torch.equal(by_name, drill.dequantize_per_token(q, scales)), "by name vs position"


@pytest.mark.clause("PT11.2", "PT11.3", "PT11.4")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_each_row_gets_its_own_tight_scale_in_every_dtype(dtype):
    x = (seeded(4, 9, seed=2) * tensor([[1.0], [100.0], [1e-3], [7.0]])).to(dtype)
    check(x, f"{dtype}")


@pytest.mark.clause("PT11.2", "PT11.4")
@pytest.mark.parametrize("shape", [(2, 3, 5), (5,), (1, 1, 1, 4), (0, 6), (3, 0, 2)])
def test_leading_dims_are_kept(shape):
    check(seeded(*shape, seed=3), f"shape {shape}")


@pytest.mark.clause("PT11.5")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_the_dequant_ref_is_q_times_the_rows_scale(dtype):
    x = seeded(2, 3, 4, seed=4).to(dtype)
    # the oracle first: the call's writes cannot reach it
    x_given = x.clone()
    q, scales = quantize(x)

    got = drill.dequantize_per_token(q, scales)

    assert got.dtype == torch.float32 and tuple(got.shape) == (2, 3, 4)
    assert torch.equal(got, q.float() * scales), "dequant is not q * scale"
    bound = 0.5 * scales * (1 + 1e-5)
    assert bool(((got - x_given.float()).abs() <= bound).all()), (
        "dequant is off by over half a scale"
    )


@pytest.mark.clause("PT11.6")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_an_all_zero_row_gets_a_positive_scale_and_zeros(dtype):
    x = tensor([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0], [0.0, -0.0, 0.0], [3.0, 0.0, 0.0]], dtype)
    # the oracle first: the call's writes cannot reach it
    x_given = x.clone()
    q, scales = check(x, "zero rows 1 and 2")
    assert scales[1].item() == 1.0 and scales[2].item() == 1.0, scales.flatten().tolist()
    assert not q[1:3].any(), "a zero row quantized to nonzero values"
    assert torch.equal(drill.dequantize_per_token(q, scales)[1:3], x_given[1:3].float())


@pytest.mark.clause("PT11.7")
@pytest.mark.parametrize(
    "layout", ["transposed", "strided rows", "sliced features", "expanded rows"]
)
def test_noncontiguous_rows_quantize_by_their_logical_layout(layout):
    views = {
        "transposed": seeded(6, 4, seed=5).T,
        "strided rows": seeded(8, 6, seed=5)[::2],
        "sliced features": seeded(4, 9, seed=5)[:, 2:8],
        "expanded rows": seeded(1, 6, seed=5).expand(4, 6),
    }
    x = views[layout]
    assert not x.is_contiguous()
    # the oracle first: the call's writes cannot reach it
    x_given = x.clone()
    q, scales = check(x, layout)
    q_copy, scales_copy = quantize(x_given.contiguous())
    assert torch.equal(q, q_copy) and torch.equal(scales, scales_copy), f"{layout} vs its copy"


@pytest.mark.clause("PT11.8")
@pytest.mark.parametrize(
    ("rows", "dtype"),
    [([[65504.0, -65504.0, 1.0], [6e-8, -6e-8, 0.0]], torch.float16),
     ([[3.0e38, -1.0e-30, 2.0], [-3.3e38, 1.0, 0.0]], torch.bfloat16),
     ([[3.4e38, -3.4e38, 1.0], [1e-39, -5e-40, 0.0], [1e-44, 0.0, 0.0]], torch.float32)],
    ids=["fp16 max and subnormal", "bf16 near max", "fp32 max and subnormal"],
)  # fmt: skip
def test_extreme_finite_values_stay_finite_and_bounded(rows, dtype):
    x = tensor(rows, dtype)
    _, scales = check(x, f"extreme {dtype}")
    assert bool(torch.isfinite(scales).all()), scales.flatten().tolist()


@pytest.mark.clause("PT11.8")
@pytest.mark.parametrize("tiny", [1e-44, 1e-40, 1e-39], ids=str)
def test_a_subnormal_row_gets_a_positive_normal_scale(tiny):
    x = tensor([[1.0, -2.0], [tiny, -tiny / 2]])
    _, scales = check(x, f"a row of {tiny}")
    assert float(scales[1]) >= TINY, f"row 1's scale {float(scales[1])} is below float32's normal"


@pytest.mark.clause("PT11.4")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_small_batch_meets_the_bound(data):
    rows = data.draw(st.integers(0, 4), label="rows")
    width = data.draw(st.integers(1, 6), label="D")
    dtype = data.draw(st.sampled_from(FLOATS), label="dtype")
    magnitude = data.draw(st.sampled_from([1e-3, 1.0, 300.0]), label="magnitude")
    x = (seeded(rows, width, seed=data.draw(st.integers(0, 2**16))) * magnitude).to(dtype)
    check(x, f"{rows}x{width} {dtype} *{magnitude}")


@pytest.mark.clause("PT11.10")
def test_x_is_only_read():
    x = seeded(3, 5, seed=6, dtype=torch.float16)
    with inputs_untouched(x=x):
        quantize(x)


# ---- rejection: NaN and infinities have no finite scale ----


@pytest.mark.clause("PT11.9")
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_nan_or_infinity_in_a_later_row_is_refused(bad, dtype):
    x = seeded(3, 4, seed=7).to(dtype)
    x[2, 1] = bad
    with inputs_untouched(x=x):
        assert_rejects(lambda: drill.quantize_per_token(x), BAD_VALUE, "x", values=[bad])


@pytest.mark.clause("PT11.9")
def test_a_non_float_x_is_refused():
    x = torch.ones(2, 3, dtype=torch.int32, device=test_device())
    with inputs_untouched(x=x):
        assert_rejects(lambda: drill.quantize_per_token(x), WRONG_KIND, "x")
