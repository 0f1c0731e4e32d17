"""Context bounds found by probing forward (extension: the contract promises positions in
[0, context_length) but not a ValueError from forward outside it, and not the length)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import test_device
from gptlab_testkit.models import cache_aware_modules

MODULES = cache_aware_modules()
pytestmark = [
    pytest.mark.extension,
    pytest.mark.parametrize("lm", list(MODULES.values()), ids=list(MODULES)),
]


def _prompt(origins: list[int], length: int, seed: int = 0):
    device = test_device()
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 16, (len(origins), length), generator=generator).to(device)
    positions = torch.tensor(origins, device=device)[:, None] + torch.arange(length, device=device)
    return ids, positions


def _context_length(model) -> int:
    """The first rejected absolute position, found through forward alone."""
    device = test_device()

    def accepts(position: int) -> bool:
        try:
            model(torch.ones(1, 1, dtype=torch.long, device=device),
                  torch.full((1, 1), position, device=device))  # fmt: skip
        except ValueError:
            return False
        return True

    low, high = 15, 32  # low is accepted (context >= 16); grow high until rejected
    while accepts(high):
        low, high = high, high * 2
        assert high <= 1 << 24, "no position was rejected: the context check is missing"
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if accepts(middle) else (low, middle)
    return high


@pytest.mark.owner("eos_context")
def test_generate_fills_context_exactly_and_rejects_one_more(lm):
    model = lm.make_test_model().to(test_device())
    context = _context_length(model)
    assert context >= 16
    # Row 1 ends at context - 2, so one new token (position context - 1) fits, two do not.
    ids, positions = _prompt([0, context - 3], 2, seed=4)
    assert model.generate(ids, positions, 1).shape == (2, 3)
    with pytest.raises(ValueError):
        model.generate(ids, positions, 2)


@pytest.mark.owner("test_model_factories")
@pytest.mark.parametrize("factory_name", ["make_test_model", "make_eos_test_model"])
def test_factories_return_models_flagged_eval(lm, factory_name):
    """This project's factories also call `.eval()`; the contract asks only for the
    behaviour (test_factories_build_identical_fp32_cpu_eval_models tests that)."""
    model = getattr(lm, factory_name)()
    assert not model.training, f"{factory_name}() returns a model in training mode"
