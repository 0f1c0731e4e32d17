"""PT14 masked_logsumexp(x, valid, dim, keepdim=...) -> (lse, weights, empty), no NaN."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate, test_device
from gptlab_testkit.oracles import assert_binds, seeded

drill = candidate("DRILL_PT14_MODULE")

pytestmark = [pytest.mark.owner("pt14"), pytest.mark.contract]

INF = math.inf


def flags(values: list) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bool, device=test_device())


def floats(values: list, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=test_device())


def loop_slice(values: list[float], keep: list[bool]) -> tuple[float, list[float], bool]:
    """(lse, weights, empty) of one slice, in float64, from the selected values alone."""
    pairs = list(zip(values, keep, strict=True))
    selected = [v for v, k in pairs if k]
    if not selected:
        return -INF, [0.0] * len(values), True
    top = max(selected)
    if top == -INF:
        return -INF, [0.0] * len(values), False
    if top == INF:
        count = selected.count(INF)
        return INF, [1.0 / count if k and v == INF else 0.0 for v, k in pairs], False
    lse = top + math.log(sum(math.exp(v - top) for v in selected))
    return lse, [math.exp(v - lse) if k else 0.0 for v, k in pairs], False


def loop_oracle(x: torch.Tensor, valid: torch.Tensor, dim: int):
    """(lse, weights, empty) slice by slice along dim: float64, float64, bool; keepdim False."""
    moved, keep = x.double().cpu().movedim(dim, -1), valid.cpu().movedim(dim, -1)
    rows, keeps = moved.reshape(-1, moved.shape[-1]).tolist(), keep.reshape(-1, keep.shape[-1])
    answers = [loop_slice(r, k) for r, k in zip(rows, keeps.tolist(), strict=True)]
    lse = torch.tensor([a[0] for a in answers], dtype=torch.float64).reshape(moved.shape[:-1])
    weights = torch.tensor([a[1] for a in answers], dtype=torch.float64).reshape(moved.shape)
    empty = torch.tensor([a[2] for a in answers], dtype=torch.bool).reshape(moved.shape[:-1])
    return lse, weights.movedim(-1, dim), empty


def check(x, valid, dim, what: str, *, rtol: float = 1e-5, atol: float = 1e-5, **options):
    """The three results against the loop oracle; no NaN; masked weights exactly 0."""
    # the oracle first: the call's writes cannot reach it
    want_lse, want_weights, want_empty = loop_oracle(x, valid, dim)
    masked = ~valid
    lse, weights, empty = drill.masked_logsumexp(x, valid, dim, **options)
    if options.get("keepdim"):
        want_lse, want_empty = want_lse.unsqueeze(dim), want_empty.unsqueeze(dim)
    assert tuple(lse.shape) == tuple(want_lse.shape), f"{what}: lse shape {tuple(lse.shape)}"
    assert tuple(weights.shape) == tuple(x.shape), f"{what}: weights {tuple(weights.shape)}"
    assert not lse.isnan().any() and not weights.isnan().any(), f"{what}: a NaN\n{lse}\n{weights}"
    close = {"rtol": rtol, "atol": atol, "msg": lambda m: f"{what}: {m}"}
    torch.testing.assert_close(lse.double().cpu(), want_lse, **close)
    torch.testing.assert_close(weights.double().cpu(), want_weights, **close)
    assert empty.dtype == torch.bool and torch.equal(empty.cpu(), want_empty), f"{what}: empty"
    assert bool((weights[masked] == 0).all()), f"{what}: a masked entry has weight"
    return lse, weights, empty


def mixed_mask(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=generator) < 0.6).to(test_device())


@pytest.mark.clause("PT14.2", "PT14.4")
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_matches_logsumexp_over_the_selected_values_along_any_dim(dim):
    x = seeded(3, 4, 5, seed=1) * 3
    valid = mixed_mask((3, 4, 5), seed=dim + 10)
    valid.select(dim, 0).fill_(True)  # every slice along dim has a valid entry
    # the oracle first: the call's writes cannot reach it
    valid_given = valid.clone()
    x_given = x.clone()
    lse, _, _ = check(x, valid, dim, f"dim {dim}")
    first = [i for i in range(x.shape[dim]) if valid_given.movedim(dim, -1)[1, 1, i]]
    by_torch = torch.logsumexp(x_given.movedim(dim, -1)[1, 1, first], dim=0)
    assert math.isclose(lse.reshape(-1)[lse.shape[-1] + 1].item(), by_torch.item(), rel_tol=1e-5)


@pytest.mark.clause("PT14.5", "PT14.6")
def test_a_fully_masked_slice_in_a_later_row_is_explicit_and_nan_free():
    x = seeded(3, 4, seed=2)
    valid = flags([[1, 1, 0, 1], [0, 0, 0, 0], [0, 1, 1, 0]])
    lse, weights, empty = check(x, valid, 1, "row 1 fully masked")
    assert lse[1].item() == -INF and empty.tolist() == [False, True, False], f"{lse}, {empty}"
    assert bool((weights[1] == 0).all()), f"row 1's weights: {weights[1].tolist()}"


@pytest.mark.clause("PT14.5")
@pytest.mark.parametrize("dim", [0, 1])
def test_everything_masked_gives_minus_inf_and_zero_weights(dim):
    x = seeded(3, 4, seed=3)
    lse, weights, empty = check(x, flags([[0] * 4] * 3), dim, "all masked")
    assert bool((lse == -INF).all() and (weights == 0).all() and empty.all())


@pytest.mark.clause("PT14.7")
def test_a_single_valid_entry_is_its_own_logsumexp_with_weight_one():
    x = floats([[0.5, -3.0, 2.0], [7.0, 1.0, -1.0]])
    lse, weights, _ = check(x, flags([[0, 1, 0], [0, 0, 1]]), 1, "one valid entry per row")
    assert weights[0, 1].item() == pytest.approx(1.0) and weights[1, 2].item() == pytest.approx(1)
    assert lse.tolist() == pytest.approx([-3.0, -1.0])


@pytest.mark.clause("PT14.6", "PT14.8")
def test_a_genuine_minus_inf_slice_is_told_apart_from_an_empty_one():
    x = floats([[-INF, -INF, 1.0], [-INF, 2.0, 3.0], [0.0, -INF, 4.0]])
    valid = flags([[1, 1, 0], [0, 0, 0], [1, 1, 1]])
    lse, weights, empty = check(x, valid, 1, "row 0 all -inf, row 1 empty")
    assert lse[0].item() == lse[1].item() == -INF, f"{lse}"
    assert empty.tolist() == [False, True, False], f"empty: {empty.tolist()}"
    assert weights[2, 1].item() == 0.0, "a -inf entry has weight"


@pytest.mark.clause("PT14.8")
def test_a_plus_inf_entry_takes_the_whole_weight_without_nan():
    x = floats([[1.0, INF, 3.0], [INF, 0.0, 5.0]])
    lse, weights, _ = check(x, flags([[1, 1, 1], [0, 1, 1]]), 1, "+inf in row 0, masked in row 1")
    assert lse[0].item() == INF and weights[0].tolist() == [0.0, 1.0, 0.0], f"{weights}"


@pytest.mark.clause("PT14.9")
@pytest.mark.parametrize("scale", [1e4, -1e4], ids=["huge", "hugely negative"])
def test_extreme_values_stay_finite(scale):
    x = seeded(3, 6, seed=4) + scale
    check(x, mixed_mask((3, 6), seed=4) | flags([[1] + [0] * 5] * 3), 1, f"values near {scale}",
          atol=1e-5 + 1e-6 * abs(scale))  # fmt: skip


@pytest.mark.clause("PT14.3", "PT14.9")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_low_precision_inputs_keep_their_dtype_and_stay_nan_free(dtype):
    x = (seeded(4, 300, seed=5) * 4).to(dtype)
    valid = mixed_mask((4, 300), seed=5)
    valid[2] = False  # a fully masked row
    lse, weights, _ = check(x, valid, 1, f"{dtype}", rtol=1e-2, atol=1e-2)
    assert lse.dtype == weights.dtype == dtype, f"{lse.dtype}, {weights.dtype}"


@pytest.mark.clause("PT14.9")
def test_fp16_values_near_the_top_of_their_range():
    x = floats([[60000.0, 60000.0, 59968.0, 0.0]], torch.float16)
    lse, _, _ = check(x, flags([[1, 1, 1, 0]]), 1, "fp16 at 6e4", rtol=1e-3, atol=1e-3)
    assert lse.isfinite().all(), "exp overflowed in fp16"


@pytest.mark.clause("PT14.9")
def test_an_fp16_sum_past_the_top_of_its_range_is_accumulated_wider():
    x = torch.zeros(1, 70000, dtype=torch.float16, device=test_device())  # sum of exps 7e4 > 65504
    lse, _, _ = check(x, flags([[True] * 70000]), 1, "fp16, 70000 entries", rtol=1e-3)
    assert lse.isfinite().all(), f"the fp16 sum overflowed: {lse}"


@pytest.mark.clause("PT14.3")
def test_fp32_inputs_give_fp32_results_and_a_bool_empty_flag():
    lse, weights, empty = drill.masked_logsumexp(seeded(2, 3, seed=6), flags([[1, 0, 1]] * 2), 1)
    assert lse.dtype == weights.dtype == torch.float32 and empty.dtype == torch.bool


@pytest.mark.clause("PT14.2", "PT14.10")
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_keepdim_is_an_explicit_option(dim):
    x, valid = seeded(2, 3, 4, seed=7), mixed_mask((2, 3, 4), seed=7)
    kept = check(x, valid, dim, f"keepdim=True, dim {dim}", keepdim=True)
    dropped = check(x, valid, dim, f"keepdim=False, dim {dim}", keepdim=False)
    default = check(x, valid, dim, f"default, dim {dim}")
    assert kept[0].shape[dim] == 1 and kept[2].shape[dim] == 1
    assert tuple(default[0].shape) == tuple(dropped[0].shape) != tuple(kept[0].shape)


@pytest.mark.clause("PT14.2", "PT14.4", "PT14.5", "PT14.6")
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_any_small_tensor_matches_the_loop_oracle(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3), label="shape"))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    x = seeded(*shape, seed=data.draw(st.integers(0, 2**16), label="seed")) * 5
    bits = data.draw(st.lists(st.booleans(), min_size=x.numel(), max_size=x.numel()))
    valid = flags(bits).reshape(shape)
    ninf = data.draw(st.lists(st.booleans(), min_size=x.numel(), max_size=x.numel()))
    x = x.masked_fill(flags(ninf).reshape(shape) & (x < 0), -INF)  # some genuine -inf inputs
    check(x, valid, dim, f"shape {shape}, dim {dim}, valid {bits}",
          keepdim=data.draw(st.booleans(), label="keepdim"))  # fmt: skip


@pytest.mark.clause("PT14.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    x, valid = seeded(2, 3, seed=8), flags([[1, 0, 1], [0, 0, 0]])
    assert_binds(drill.masked_logsumexp, x, valid, 1)
    assert_binds(drill.masked_logsumexp, dim=1, valid=valid, x=x, keepdim=True)
    by_name = drill.masked_logsumexp(dim=1, valid=valid, x=x)
    want_lse, _, _ = loop_oracle(x, valid, 1)
    torch.testing.assert_close(by_name[0].double().cpu(), want_lse, rtol=1e-5, atol=1e-5)
