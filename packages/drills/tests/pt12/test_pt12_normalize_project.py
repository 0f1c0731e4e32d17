"""PT12 normalize_project(x [*, H], weight [O, H], eps) -> [*, O]: fp32 stats, caller's autocast."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT12_MODULE")

pytestmark = [pytest.mark.owner("pt12"), pytest.mark.contract]

H, OUT, EPS = 7, 5, 1e-6  # an odd hidden size
# error allowed, relative to |normed| @ |weight|^T: rounding of normed and of the output
TOLERANCE = {torch.float32: 1e-5, torch.float16: 4e-3, torch.bfloat16: 2.5e-2}


def project(x, weight, eps=EPS):
    """A valid call: a refusal from it is a failed check, not a crash."""
    try:
        return drill.normalize_project(x, weight, eps)
    except (ValueError, TypeError, RuntimeError) as error:
        raise AssertionError(f"a valid call failed: {type(error).__name__}: {error}") from error


def oracle(x: torch.Tensor, weight: torch.Tensor, eps: float):
    """(float64 result, the scale its rounding error is measured in), row by row."""
    wide, w = x.double().cpu(), weight.double().cpu()
    normed = torch.empty_like(wide)
    for index in range(wide.reshape(-1, wide.shape[-1]).shape[0]):
        row = wide.reshape(-1, wide.shape[-1])[index]
        normed.view(-1, wide.shape[-1])[index] = row / (row.pow(2).mean() + eps).sqrt()
    return normed @ w.T, normed.abs() @ w.abs().T


def check(call, x, weight, eps, dtype, what) -> None:
    """Run `call` after the oracle: the call's in-place writes cannot reach the oracle."""
    # the oracle first: the call's writes cannot reach it
    want, scale = oracle(x, weight, eps)
    got = call()
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)}"
    assert got.dtype == dtype, f"{what}: dtype {got.dtype}, want {dtype}"
    assert got.device == x.device, f"{what}: on {got.device}, x on {x.device}"
    error = (got.double().cpu() - want).abs()
    limit = TOLERANCE[dtype] * scale + 1e-30
    worst = float((error / limit).max()) if error.numel() else 0.0
    assert worst <= 1.0, f"{what}: error {worst:.2f}x the {dtype} tolerance"


def inputs(dtype=torch.float32, magnitude=1.0, seed=1, shape=(2, 3, H)):
    x = (seeded(*shape, seed=seed) * magnitude).to(dtype)
    weight = seeded(OUT, shape[-1], seed=seed + 1).to(dtype)
    return x, weight


@pytest.mark.clause("PT12.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    x, weight = inputs()
    assert_binds(drill.normalize_project, x, weight, EPS)
    assert_binds(drill.normalize_project, eps=EPS, weight=weight, x=x)
    by_name = drill.normalize_project(eps=EPS, weight=weight, x=x)
    assert torch.equal(by_name, project(x, weight)), "by name vs by position"


@pytest.mark.clause("PT12.2", "PT12.3", "PT12.4")
@pytest.mark.parametrize("dtype", list(TOLERANCE), ids=str)
def test_each_dtype_matches_the_float64_oracle_and_keeps_its_dtype(dtype):
    x, weight = inputs(dtype)
    check(lambda: project(x, weight), x, weight, EPS, dtype, f"{dtype}")


@pytest.mark.clause("PT12.2")
@pytest.mark.parametrize("shape", [(H,), (4, H), (2, 1, 3, H), (0, H), (3, 1)], ids=str)
def test_leading_dims_are_kept(shape):
    x, weight = inputs(shape=shape)
    check(lambda: project(x, weight), x, weight, EPS, torch.float32, f"shape {shape}")


@pytest.mark.clause("PT12.5")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_the_projection_follows_the_surrounding_autocast(dtype):
    x, weight = inputs(torch.float32, seed=3)

    def call():
        with torch.autocast("cpu", dtype=dtype):
            return project(x.cpu(), weight.cpu())

    check(call, x.cpu(), weight.cpu(), EPS, dtype, f"under autocast {dtype}")


@pytest.mark.clause("PT12.5", "PT12.6")
def test_under_autocast_large_values_still_get_float32_statistics():
    x, weight = inputs(torch.float16, magnitude=3e4, seed=4)

    def call():
        with torch.autocast("cpu", dtype=torch.float16):
            return project(x.cpu(), weight.cpu())

    check(call, x.cpu(), weight.cpu(), EPS, torch.float16, "fp16 values ~3e4 under autocast")


@pytest.mark.clause("PT12.6")
@pytest.mark.parametrize(("dtype", "magnitude"), [(torch.float16, 3e4), (torch.bfloat16, 1e18)])
def test_large_values_do_not_overflow_the_statistics(dtype, magnitude):
    x, weight = inputs(dtype, magnitude=magnitude, seed=5)
    check(lambda: project(x, weight), x, weight, EPS, dtype, f"{dtype} values ~{magnitude}")


@pytest.mark.clause("PT12.6")
@pytest.mark.parametrize(("dtype", "magnitude"), [(torch.float16, 3e-4), (torch.float32, 1e-15)])
def test_a_tiny_variance_is_measured_not_lost(dtype, magnitude):
    x, weight = inputs(dtype, magnitude=magnitude, seed=6)
    eps = 1e-7 if dtype == torch.float16 else 1e-35
    check(lambda: project(x, weight, eps), x, weight, eps, dtype, f"{dtype} values ~{magnitude}")


@pytest.mark.clause("PT12.8")
@pytest.mark.parametrize(("lead", "dtype"), [((2, 3), torch.float32), ((), torch.float16)])
def test_the_result_stays_on_xs_device_and_nothing_is_made_on_the_cpu(lead, dtype):
    x = torch.empty(*lead, H, device="meta", dtype=dtype)
    weight = torch.empty(OUT, H, device="meta", dtype=dtype)
    got = project(x, weight)
    assert got.device.type == "meta" and tuple(got.shape) == (*lead, OUT), (got.device, got.shape)
    assert got.dtype == dtype


@pytest.mark.clause("PT12.9")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_x_and_weight_are_only_read(dtype):
    x, weight = inputs(dtype, seed=7)
    with inputs_untouched(x=x, weight=weight):
        project(x, weight)


# ---- rejection: eps must be positive ----


@pytest.mark.clause("PT12.7")
@pytest.mark.parametrize(
    "eps", [0.0, 0, -1e-6, float("nan")], ids=["0.0", "int 0", "negative", "nan"]
)
def test_an_eps_that_is_not_positive_is_refused(eps):
    x, weight = inputs(seed=8)
    with inputs_untouched(x=x, weight=weight):
        assert_rejects(lambda: drill.normalize_project(x, weight, eps), BAD_VALUE, "eps")
