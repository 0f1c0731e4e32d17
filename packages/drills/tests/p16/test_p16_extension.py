"""P16 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import (
    BAD_VALUE,
    WRONG_KIND,
    assert_rejects,
    candidate,
    test_device,
)
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P16_MODULE")

pytestmark = [pytest.mark.owner("p16"), pytest.mark.extension]


def build(dim: int, hidden: int, seed: int):
    """A SwiGLU whose weights come from `seeded` (set through the state dict)."""
    mlp = drill.SwiGLU(dim, hidden).to(test_device())
    mlp.load_state_dict(
        {"gate_up_proj.weight": seeded(2 * hidden, dim, seed=seed) / math.sqrt(dim),
         "down_proj.weight": seeded(dim, hidden, seed=seed + 1) / math.sqrt(hidden)},
        strict=True,
    )  # fmt: skip
    return mlp


@pytest.mark.clause("P16.10")
def test_an_input_of_the_wrong_width_is_rejected_before_any_matmul():
    mlp, x = build(4, 3, seed=13), seeded(2, 3, 5, seed=14)

    with inputs_untouched(x=x):
        assert_rejects(lambda: mlp(x), BAD_VALUE, "x")


@pytest.mark.clause("P16.9")
@pytest.mark.parametrize(
    ("args", "argument"), [((0, 4), "dim"), ((4, 0), "hidden_dim"), ((4, -2), "hidden_dim")]
)
def test_non_positive_sizes_are_rejected(args, argument):
    assert_rejects(lambda: drill.SwiGLU(*args), BAD_VALUE, argument, values=(min(args),))


@pytest.mark.clause("P16.9")
@pytest.mark.parametrize(
    ("args", "argument"),
    [((4.0, 3), "dim"), ((True, 3), "dim"), ((4, "3"), "hidden_dim"), ((4, 3.0), "hidden_dim")],
    ids=str,
)
def test_sizes_of_another_kind_are_rejected(args, argument):
    assert_rejects(lambda: drill.SwiGLU(*args), WRONG_KIND, argument)


@pytest.mark.clause("P16.10")
@pytest.mark.parametrize("bad", ["0-d", "list"])
def test_an_input_that_is_not_a_token_tensor_is_rejected(bad):
    mlp = build(4, 3, seed=27)
    x = torch.tensor(1.0, device=test_device()) if bad == "0-d" else [[1.0] * 4]

    assert_rejects(lambda: mlp(x), WRONG_KIND, "x")


@pytest.mark.clause("P16.11")
@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.int64, torch.bool])
def test_an_input_of_another_dtype_is_rejected(dtype):
    mlp, x = build(4, 3, seed=28), seeded(2, 4, seed=29).to(dtype)

    with inputs_untouched(x=x):
        assert_rejects(lambda: mlp(x), WRONG_KIND, "x", values=(dtype,))


@pytest.mark.clause("P16.12")
def test_an_input_on_another_device_is_rejected():
    mlp, x = build(4, 3, seed=30), torch.empty(2, 4, device="meta")

    assert_rejects(lambda: mlp(x), BAD_VALUE, "x")
