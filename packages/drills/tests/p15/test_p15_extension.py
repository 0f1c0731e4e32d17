"""P15 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import math

import pytest
import torch

from gptlab_testkit import (
    BAD_VALUE,
    WRONG_KIND,
    assert_close,
    assert_rejects,
    candidate,
    test_device,
)
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P15_MODULE")

pytestmark = [pytest.mark.owner("p15"), pytest.mark.extension]


def long(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=test_device())


def rejects(argument, call, errors=BAD_VALUE, values=()):
    tensors = {k: v for k, v in call.items() if isinstance(v, torch.Tensor) and not v.is_meta}
    with inputs_untouched(**tensors):
        assert_rejects(lambda: drill.apply_rotary(**call), errors, argument, values=values)


def valid_call():
    return {
        "q": seeded(2, 4, 3, 8, seed=17),
        "k": seeded(2, 2, 3, 8, seed=18),
        "positions": long([[0, 1, 2], [5, 6, 7]]),
    }


def loop_rotary(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """One pair at a time in float64: channel i with i + D/2, angle p * theta^(-2i/D)."""
    B, H, T, D = x.shape
    half = D // 2
    pos = positions.expand(B, T).tolist()
    values = x.double().tolist()
    out = torch.zeros(B, H, T, D, dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            for t in range(T):
                v = values[b][h][t]
                for i in range(half):
                    a = pos[b][t] * theta ** (-2 * i / D)
                    out[b, h, t, i] = v[i] * math.cos(a) - v[i + half] * math.sin(a)
                    out[b, h, t, i + half] = v[i + half] * math.cos(a) + v[i] * math.sin(a)
    return out.to(x.device)


def rotate(q, k, positions, **kwargs):
    got_q, got_k = drill.apply_rotary(q, k, positions, **kwargs)
    assert got_q.shape == q.shape and got_k.shape == k.shape
    assert got_q.dtype == q.dtype and got_k.dtype == k.dtype
    return got_q, got_k


@pytest.mark.clause("P15.9")
def test_q_and_k_of_different_head_dims_are_rejected():
    call = {**valid_call(), "k": seeded(2, 2, 3, 6, seed=21)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.apply_rotary(**call), ValueError, ("k", "q"))


@pytest.mark.clause("P15.10")
@pytest.mark.parametrize(
    "bad",
    [[[0, 1, 2], [5, -1, 7]], [[0, 1], [5, 6]], [0, 1, 2, 3]],
    ids=["negative in row 1", "too few tokens", "flat of the wrong length"],
)
def test_positions_that_do_not_fit_are_rejected(bad):
    call = {**valid_call(), "positions": long(bad)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.apply_rotary(**call), ValueError, "positions")


@pytest.mark.clause("P15.10")
def test_float_positions_are_rejected():
    call = {**valid_call(), "positions": valid_call()["positions"].float()}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.apply_rotary(**call), (ValueError, TypeError), "positions")


@pytest.mark.clause("P15.9")
@pytest.mark.parametrize("which", ["k of batch 1", "k of another T", "q of another T"])
def test_q_and_k_of_different_batch_or_length_are_rejected(which):
    call = valid_call()
    if which == "k of batch 1":
        call["k"] = call["k"][:1].clone()
    elif which == "k of another T":
        call["k"] = call["k"][:, :, :2].clone()
    else:
        call["q"] = call["q"][:, :, :2].clone()
    rejects(("q", "k", "positions"), call)


@pytest.mark.clause("P15.9")
@pytest.mark.parametrize("which", ["int q", "3-D k", "list q", "complex k"])
def test_q_or_k_of_another_kind_or_rank_are_rejected(which):
    call = valid_call()
    if which == "int q":
        call["q"] = call["q"].long()
    elif which == "3-D k":
        call["k"] = call["k"][:, 0].clone()
    elif which == "list q":
        call["q"] = call["q"].tolist()
    else:
        call["k"] = call["k"].to(torch.complex64)
    rejects(("q", "k"), call, WRONG_KIND)


@pytest.mark.clause("P15.10")
@pytest.mark.parametrize("which", ["bool", "list"])
def test_positions_of_another_kind_are_rejected(which):
    call = valid_call()
    call["positions"] = call["positions"] > 0 if which == "bool" else call["positions"].tolist()
    rejects("positions", call, WRONG_KIND)


@pytest.mark.clause("P15.11")
@pytest.mark.parametrize("theta", [0.0, -10000.0, math.nan, math.inf], ids=repr)
def test_a_theta_that_is_not_finite_and_positive_is_rejected(theta):
    rejects("theta", {**valid_call(), "theta": theta}, values=(theta,))


@pytest.mark.clause("P15.11")
@pytest.mark.parametrize("theta", [True, "10000", None], ids=repr)
def test_a_theta_of_another_kind_is_rejected(theta):
    rejects("theta", {**valid_call(), "theta": theta}, WRONG_KIND)


@pytest.mark.clause("P15.12")
@pytest.mark.parametrize("where", ["positions", "all"])
def test_meta_tensors_are_rejected(where):
    call = valid_call()
    names = ("positions",) if where == "positions" else ("q", "k", "positions")
    for name in names:
        call[name] = call[name].to("meta")
    rejects(("q", "k", "positions"), call)


@pytest.mark.clause("P15.11")
@pytest.mark.parametrize("theta", [1.0, 0.5], ids=repr)
def test_a_theta_of_one_or_below_is_a_valid_base(theta):
    q, k = seeded(1, 1, 2, 4, seed=40), seeded(1, 1, 2, 4, seed=41)
    positions = long([1, 3])

    try:
        got_q, _ = rotate(q, k, positions, theta=theta)
    except Exception as error:  # the clause accepts it: a rejection is this test's failure
        raise AssertionError(f"theta = {theta} was refused: {error}") from error

    assert_close(got_q.double(), loop_rotary(q, positions, theta), f"q with theta = {theta}")
