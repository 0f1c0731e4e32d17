"""P14 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

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

drill = candidate("DRILL_P14_MODULE")

pytestmark = [pytest.mark.owner("p14"), pytest.mark.extension]


def module(dim: int, eps: float = 1e-6):
    return drill.RMSNorm(dim, eps=eps).to(test_device())


def rejects(argument, x, weight, eps=1e-6, errors=BAD_VALUE, values=()):
    tensors = {k: t for k, t in (("x", x), ("weight", weight)) if isinstance(t, torch.Tensor)}
    with inputs_untouched(**{k: t for k, t in tensors.items() if not t.is_meta}):
        assert_rejects(lambda: drill.rms_norm(x, weight, eps=eps), errors, argument, values=values)


@pytest.mark.clause("P14.11")
def test_a_weight_of_the_wrong_size_is_rejected():
    x, weight = seeded(2, 6, seed=19), seeded(5, seed=20)

    with inputs_untouched(x=x, weight=weight):
        assert_rejects(lambda: drill.rms_norm(x, weight, eps=1e-6), ValueError, ("weight", "x"))


@pytest.mark.clause("P14.12")
@pytest.mark.parametrize("eps", [-1e-6, 0.0, float("nan"), float("inf")], ids=repr)
def test_an_eps_that_is_not_finite_and_positive_is_rejected(eps):
    x, weight = seeded(2, 6, seed=21), seeded(6, seed=22)

    with inputs_untouched(x=x, weight=weight):
        assert_rejects(lambda: drill.rms_norm(x, weight, eps=eps), BAD_VALUE, "eps", values=(eps,))


@pytest.mark.clause("P14.10")
def test_integer_inputs_are_rejected():
    x, weight = torch.arange(12, device=test_device()).reshape(2, 6), seeded(6, seed=23)

    assert_rejects(lambda: drill.rms_norm(x, weight, eps=1e-6), (ValueError, TypeError), "x")


@pytest.mark.clause("P14.13")
@pytest.mark.parametrize("dim", [0, -3])
def test_a_module_of_non_positive_size_is_rejected(dim):
    assert_rejects(lambda: drill.RMSNorm(dim), BAD_VALUE, "dim", values=(dim,))


@pytest.mark.clause("P14.10")
@pytest.mark.parametrize("bad", ["bool", "complex", "list"])
def test_x_of_another_kind_is_rejected(bad):
    x = seeded(2, 6, seed=42)
    x = {"bool": x > 0, "complex": x.to(torch.complex64), "list": x.tolist()}[bad]
    rejects("x", x, seeded(6, seed=43), errors=WRONG_KIND)


@pytest.mark.clause("P14.10")
@pytest.mark.parametrize("shape", [(), (2, 0)], ids=["0-d", "D=0"])
def test_x_without_a_channel_dim_is_rejected(shape):
    x = torch.ones(shape, device=test_device())
    weight = torch.ones(shape[-1:] or (1,), device=test_device())
    rejects(("x", "weight"), x, weight)


@pytest.mark.clause("P14.11")
@pytest.mark.parametrize("bad", ["int64", "list"])
def test_a_weight_of_another_kind_is_rejected(bad):
    weight = torch.ones(6, device=test_device())
    weight = weight.long() if bad == "int64" else weight.tolist()
    rejects("weight", seeded(2, 6, seed=44), weight, errors=WRONG_KIND)


@pytest.mark.clause("P14.11")
def test_a_weight_of_another_rank_is_rejected():
    rejects(("weight", "x"), seeded(2, 6, seed=45), torch.ones(1, 6, device=test_device()))


@pytest.mark.clause("P14.11")
def test_a_weight_on_another_device_is_rejected():
    rejects("weight", seeded(2, 6, seed=46), torch.ones(6, device="meta"))


@pytest.mark.clause("P14.12")
@pytest.mark.parametrize("eps", [True, "1e-6", None], ids=repr)
def test_an_eps_of_another_kind_is_rejected(eps):
    rejects("eps", seeded(2, 6, seed=47), seeded(6, seed=48), eps=eps, errors=WRONG_KIND)


@pytest.mark.clause("P14.12")
@pytest.mark.parametrize("eps", [0.0, float("nan"), True], ids=repr)
def test_the_module_rejects_a_bad_eps_at_construction(eps):
    assert_rejects(lambda: drill.RMSNorm(4, eps=eps), WRONG_KIND, "eps")


@pytest.mark.clause("P14.13")
@pytest.mark.parametrize("dim", [4.0, True, "4"], ids=repr)
def test_a_module_size_of_another_kind_is_rejected(dim):
    assert_rejects(lambda: drill.RMSNorm(dim), WRONG_KIND, "dim")


@pytest.mark.clause("P14.11")
def test_a_weight_of_the_wrong_size_for_a_single_vector_is_rejected():
    rejects(("weight", "x"), seeded(6, seed=49), seeded(5, seed=50))
