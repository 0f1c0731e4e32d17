"""P01 stride_report(x) -> dict: shape, stride, storage_offset, is_contiguous, dtype, device,
data_ptr, each checked against the tensor itself after views, offsets and clones."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate, test_device
from gptlab_testkit.objects import reported, reported_address
from gptlab_testkit.oracles import assert_binds, inputs_untouched

drill = candidate("DRILL_P01_MODULE")

pytestmark = [pytest.mark.owner("p01"), pytest.mark.contract]

KEYS = {"shape", "stride", "storage_offset", "is_contiguous", "dtype", "device", "data_ptr"}


def contiguous_flag(report: dict) -> bool:
    """`is_contiguous`, or `contiguous` (the README accepts either key)."""
    key = "is_contiguous" if "is_contiguous" in report else "contiguous"
    assert key in report, f"report has neither is_contiguous nor contiguous: {sorted(report)}"
    return report[key]


def report_of(x: torch.Tensor) -> dict:
    """The candidate's report of x, its data_ptr read as an address of x's memory here (a
    candidate graded in a process of its own reports its copy's: `reported_address`)."""
    report = drill.stride_report(x)
    if isinstance(report, dict) and "data_ptr" in report:
        report = {**report, "data_ptr": reported_address(report["data_ptr"])}
    return report


def assert_reports(x: torch.Tensor, what: str) -> dict:
    """The candidate's report of x agrees with the tensor on every documented key."""
    report = report_of(x)
    assert isinstance(report, dict), f"{what}: returned {type(report).__name__}, not a dict"
    missing = KEYS - set(report) - ({"is_contiguous"} if "contiguous" in report else set())
    assert not missing, f"{what}: report lacks {sorted(missing)}"
    assert tuple(report["shape"]) == tuple(x.shape), f"{what}: shape {report['shape']}"
    assert tuple(report["stride"]) == x.stride(), f"{what}: stride {report['stride']}"
    offset = report["storage_offset"]
    assert offset == x.storage_offset(), f"{what}: storage_offset {offset}"
    flag = contiguous_flag(report)
    assert flag == x.is_contiguous(), f"{what}: contiguous {flag}, tensor says {x.is_contiguous()}"
    assert report["dtype"] in (x.dtype, str(x.dtype)), f"{what}: dtype {report['dtype']}"
    assert torch.device(report["device"]) == x.device, f"{what}: device {report['device']}"
    where = reported(x)
    assert report["data_ptr"] == x.data_ptr(), f"{what}: data_ptr {report['data_ptr']}{where}"
    return report


def type_name(value: object) -> str:
    return type(value).__name__


def grid(*shape: int, dtype=torch.float32) -> torch.Tensor:
    return torch.arange(torch.Size(shape).numel(), device=test_device()).to(dtype).reshape(shape)


@pytest.mark.clause("P01.2", "P01.3", "P01.4", "P01.5")
def test_a_fresh_tensor_is_contiguous_at_offset_zero():
    x = grid(3, 4)

    report = assert_reports(x, "fresh [3, 4]")

    assert tuple(report["stride"]) == (4, 1) and report["storage_offset"] == 0


@pytest.mark.clause("P01.3", "P01.5", "P01.6")
def test_a_transpose_swaps_strides_and_shares_the_first_element():
    x = grid(3, 4)

    report = assert_reports(x.t(), "transpose")

    assert report["data_ptr"] == report_of(x)["data_ptr"], "transpose moved data_ptr"
    assert contiguous_flag(report) is False


@pytest.mark.clause("P01.4", "P01.5", "P01.6")
def test_a_narrow_view_reports_its_offset_and_the_address_of_its_first_element():
    x = grid(4, 6)
    view = x.narrow(1, 2, 3)  # columns 2..4: starts 2 elements in, rows still 6 apart

    report = assert_reports(view, "narrow columns")

    assert report["storage_offset"] == 2
    assert report["data_ptr"] == x.data_ptr() + 2 * x.element_size()
    assert contiguous_flag(report) is False, "a column slice is not contiguous"


@pytest.mark.clause("P01.4", "P01.6")
def test_a_row_slice_is_contiguous_with_an_offset():
    x = grid(4, 6, dtype=torch.float16)

    report = assert_reports(x[1:3], "rows 1..2 of fp16")

    assert report["storage_offset"] == 6
    assert report["data_ptr"] == x.data_ptr() + 6 * 2, "fp16 elements are 2 bytes"


@pytest.mark.clause("P01.3", "P01.4", "P01.6")
def test_a_reshape_that_stays_a_view_keeps_the_storage():
    x = grid(2, 3, 4)
    view = x[1].reshape(12)  # rows of one batch entry are contiguous: no copy needed

    report = assert_reports(view, "reshape that stays a view")

    assert report["data_ptr"] == x.data_ptr() + 12 * x.element_size()
    assert report["storage_offset"] == 12


@pytest.mark.clause("P01.4", "P01.6")
def test_a_clone_has_its_own_storage():
    x = grid(3, 4).t()

    report = assert_reports(x.clone(), "clone of a transpose")

    assert report["data_ptr"] != x.data_ptr(), "a clone shares the original's address"
    assert report["storage_offset"] == 0


@pytest.mark.clause("P01.5")
def test_size_one_dims_do_not_break_contiguity_whatever_their_stride():
    x = grid(12).as_strided((3, 1, 4), (4, 100, 1))

    report = assert_reports(x, "size-one dim with stride 100")

    assert contiguous_flag(report) is True


@pytest.mark.clause("P01.3", "P01.5")
def test_an_expanded_tensor_reports_stride_zero():
    x = grid(1, 4).expand(3, 4)

    report = assert_reports(x, "expand")

    assert tuple(report["stride"]) == (0, 1) and contiguous_flag(report) is False


@pytest.mark.clause("P01.3", "P01.4", "P01.5", "P01.6")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_chain_of_views_is_reported_as_the_tensor_sees_itself(data):
    dtype = data.draw(st.sampled_from([torch.float32, torch.float64, torch.int16, torch.uint8]))
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4), label="shape")
    x = grid(*shape, dtype=dtype)
    for step in range(data.draw(st.integers(0, 3), label="views")):
        dim = data.draw(st.integers(0, x.dim() - 1), label=f"dim {step}")
        kind = data.draw(st.sampled_from(["narrow", "transpose", "step", "unsqueeze"]))
        if kind == "narrow" and x.shape[dim] > 1:
            start = data.draw(st.integers(1, x.shape[dim] - 1), label="start")
            x = x.narrow(dim, start, x.shape[dim] - start)
        elif kind == "transpose":
            x = x.transpose(dim, x.dim() - 1)
        elif kind == "step":
            x = x[(slice(None),) * dim + (slice(None, None, 2),)]
        else:
            x = x.unsqueeze(dim)

    assert_reports(x, f"{dtype} view {tuple(x.shape)} stride {x.stride()}")


@pytest.mark.clause("P01.9")
def test_the_report_leaves_the_tensor_unchanged():
    x = grid(3, 4).t()
    with inputs_untouched(x=x):
        drill.stride_report(x)


@pytest.mark.clause("P01.1")
def test_x_is_the_one_positional_argument():
    x = grid(2, 3)

    assert_binds(drill.stride_report, x)
    assert_reports(x, "positional x")


@pytest.mark.clause("P01.1", "P01.3", "P01.5", "P01.6")
@pytest.mark.parametrize("shape", [(), (0, 3), (3, 0, 2)], ids=str)
def test_a_scalar_and_a_zero_element_tensor_are_reported(shape):
    x = torch.zeros(shape, device=test_device())

    assert_reports(x, f"shape {shape}")


@pytest.mark.clause("P01.7")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool], ids=str)
def test_the_report_holds_python_numbers_and_the_tensors_dtype_and_device(dtype):
    x = grid(4, 6).to(dtype)[1:, 2:]

    report = assert_reports(x, f"{dtype} slice")

    for key in ("shape", "stride"):
        assert all(type(v) is int for v in report[key]), f"{key} holds {report[key]!r}"
    for key in ("storage_offset", "data_ptr"):
        assert type(report[key]) is int, f"{key} is a {type(report[key]).__name__}, not int"
    assert type(contiguous_flag(report)) is bool, "is_contiguous is not a bool"
    assert str(report["dtype"]) == str(dtype), f"dtype {report['dtype']!r}, tensor {dtype}"
