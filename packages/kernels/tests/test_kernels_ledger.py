"""The ledger's checker: formulas read from backticks, grids compared with real launches (a
stranger's other tiling included), traffic held between the bytes moved and twice them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from gptlab_kernels import t06
from gptlab_kernels.ledger import (
    LedgerError,
    evaluate,
    formulas,
    grid_mismatch,
    traffic_mismatch,
)
from gptlab_testkit.oracles import LaunchedGrids

pytestmark = [pytest.mark.extension, pytest.mark.owner("grading")]

FAITHFUL = Path(__file__).parents[1] / "faithful"


def stranger(name: str):
    spec = importlib.util.spec_from_file_location(name, FAITHFUL / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launches_of(call) -> list[dict]:
    with LaunchedGrids() as seen:
        call()
    return seen.launches


def test_formulas_are_read_from_backticks_and_labels_pick_the_function():
    ledger = {"grid": "`(M,)` per row; `transpose: (N, M)`; `other: (1,)`; prose (M, N)"}

    assert formulas(ledger, "grid", "transpose") == ["(M,)", "(N, M)"]
    assert formulas(ledger, "grid", "add_row_bias") == ["(M,)"]
    assert formulas(None, "grid", "axpy") == []


def test_a_formula_reads_arithmetic_names_cdiv_and_sizes_only():
    assert evaluate("(cdiv(n, BLOCK), 2 * B - 1)", {"n": 1000, "BLOCK": 256, "B": 3}) == (4, 5)
    assert evaluate("n * (size(x) + size(out))", {"n": 10}, {"x": 2, "out": 4}) == 60
    with pytest.raises(LedgerError, match="'rows'"):
        evaluate("(rows,)", {"M": 3})
    with pytest.raises(LedgerError, match="size"):
        evaluate("n * size(y)", {"n": 3}, {"x": 4})
    with pytest.raises(LedgerError):
        evaluate("__import__('os').getpid()", {})
    with pytest.raises(LedgerError):
        evaluate("x.shape", {"x": 1})


def test_another_tiling_passes_when_its_ledger_states_its_own_grid():
    kernel = stranger("good_t06_chunked_rows")  # dequantize over [cdiv(M, 4), cdiv(D, 32)]
    M, D = 9, 70
    q = torch.randint(-127, 128, (M, D), dtype=torch.int8)
    scales, out = torch.rand(M), torch.empty(M, D)
    launches = launches_of(lambda: kernel.dequantize_per_token(q, scales, out))
    own = {"grid": "`dequantize_per_token: (cdiv(M, BR), cdiv(D, BC))`"}

    assert [launch["grid"] for launch in launches] == [[3, 3, 1]]
    assert grid_mismatch(own, "dequantize_per_token", launches, {"M": M, "D": D}) is None
    problem = grid_mismatch(t06.LEDGER, "dequantize_per_token", launches, {"M": M, "D": D})
    assert problem is not None and "(9, 1, 1)" in problem and "(3, 3, 1)" in problem


def test_a_launch_the_ledger_does_not_state_is_named():
    M, D = 4, 16
    x, q = torch.randn(M, D), torch.empty(M, D, dtype=torch.int8)
    launches = launches_of(lambda: t06.quantize_per_token(x, q, torch.empty(M)))

    problem = grid_mismatch({"grid": "one program per row"}, "quantize_per_token", launches, {})
    assert problem is not None and "0 grid formula(s)" in problem and "launched 1" in problem


@pytest.mark.parametrize(
    ("formula", "holds"),
    [
        ("`n * (size(x) + size(y) + size(out))`", True),
        ("`n * (size(x) + size(out))`", False),  # y forgotten: two thirds of the bytes
        ("`3 * n * (size(x) + size(y) + size(out))`", False),  # every buffer counted thrice
        ("`n * (size(x) + size(y) + size(out)) + 64`", True),  # a little workspace beside
    ],
)
def test_the_traffic_lies_between_the_bytes_moved_and_twice_them(formula, holds):
    sizes = {"x": 2, "y": 2, "out": 2}
    problem = traffic_mismatch({"traffic": formula}, "axpy", {"n": 1000}, sizes, 6000)
    assert (problem is None) is holds, problem
