"""Requests speculative decoding refuses, before any decoding (this project's extension)."""

from __future__ import annotations

import copy

import pytest
import torch

from gptlab_testkit import candidate, test_device
from gptlab_testkit.models import cache_aware_modules

sd = candidate("SPECULATIVE_DECODING_MODULE")
MODULES = cache_aware_modules()

pytestmark = [pytest.mark.extension, pytest.mark.owner("speculative_accounting")]


@pytest.fixture(scope="module", params=list(MODULES), ids=list(MODULES))
def target(request):
    return MODULES[request.param].make_test_model().to(test_device())


def prompt(length=3, origin=0, batch=1):
    ids = (torch.arange(length, device=test_device()) + 3).repeat(batch, 1)
    return ids, origin + torch.arange(length, device=test_device()).repeat(batch, 1)


def context_length(model):
    """The first position the model refuses (faithful models reject positions beyond it)."""
    ids = torch.tensor([[1]], device=test_device())
    for position in range(4096):
        try:
            model(ids, torch.tensor([[position]], device=test_device()))
        except ValueError:
            return position
    raise AssertionError("the model accepted every position below 4096")


def test_batch_larger_than_one_is_rejected(target):
    ids, positions = prompt(batch=2)
    with pytest.raises(ValueError, match="batch"):
        sd.speculative_generate(target, target, ids, positions, 2, 2)


@pytest.mark.parametrize(
    ("width", "error"), [(0, ValueError), (-1, ValueError), (True, TypeError), (1.5, TypeError)]
)
def test_speculation_width_must_be_a_positive_int(target, width, error):
    ids, positions = prompt()
    with pytest.raises(error, match="num_speculative_tokens"):
        sd.speculative_generate(target, target, ids, positions, 2, width)


@pytest.mark.parametrize(
    ("budget", "error"), [(-1, ValueError), (False, TypeError), (2.0, TypeError)]
)
def test_budget_must_be_a_non_negative_int(target, budget, error):
    ids, positions = prompt()
    with pytest.raises(error, match="max_new_tokens"):
        sd.speculative_generate(target, target, ids, positions, budget, 2)


def test_budget_beyond_the_context_is_rejected_exactly_where_generate_rejects_it(target):
    context = context_length(target)
    ids, positions = prompt(length=3, origin=5)
    fitting = context - 1 - int(positions[0, -1])  # the last new token sits at context - 1
    out = sd.speculative_generate(target, copy.deepcopy(target), ids, positions, fitting, 3)
    assert torch.equal(out.tokens, target.generate(ids, positions, fitting))
    with pytest.raises(ValueError, match="context"):
        target.generate(ids, positions, fitting + 1)
    with pytest.raises(ValueError, match="context"):
        sd.speculative_generate(target, copy.deepcopy(target), ids, positions, fitting + 1, 3)


def test_draft_with_another_vocabulary_is_rejected(target, drafts):
    ids, positions = prompt()
    with pytest.raises(ValueError, match="vocabular"):
        sd.speculative_generate(target, drafts.wider(target), ids, positions, 4, 2)
    with pytest.raises(ValueError, match="vocabular"):
        sd.speculative_generate(drafts.wider(target), target, ids, positions, 4, 2)


def test_positions_of_another_shape_are_rejected(target):
    ids, positions = prompt()
    with pytest.raises(ValueError, match="positions"):
        sd.speculative_generate(target, target, ids, positions[:, :-1], 2, 2)
