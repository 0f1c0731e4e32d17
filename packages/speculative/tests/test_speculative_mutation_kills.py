"""Valid requests at the edges the other contract tests leave out.

A prompt may hold token 0 (ids 0..15 are valid), and a model whose context ends at
position 15 (the floor `make_test_model()` promises) serves a budget that reaches
position 15: neither is an error, and the output is the target's own greedy `generate`.
"""

from __future__ import annotations

import copy

import pytest
import torch

from gptlab_testkit import candidate, test_device
from gptlab_testkit.models import cache_aware_modules

sd = candidate("SPECULATIVE_DECODING_MODULE")
MODULES = cache_aware_modules()

pytestmark = pytest.mark.contract

ORIGIN = 1
FLOOR = 16  # make_test_model() promises positions 0..15, no more


@pytest.fixture(scope="module", params=list(MODULES), ids=list(MODULES))
def target(request):
    return MODULES[request.param].make_test_model().to(test_device())


class FloorContext:
    """The model with its context cut to positions 0..15, rejecting beyond as a model does.

    A faithful cache-aware model at the promised floor: a ValueError for any position
    it cannot hold, the model's own output otherwise.
    """

    def __init__(self, model) -> None:
        self.model = model

    def __call__(self, input_ids, positions, **kwargs):
        if int(positions.max()) >= FLOOR:
            raise ValueError(f"positions: {int(positions.max())} is beyond the context of {FLOOR}")
        return self.model(input_ids, positions, **kwargs)


def prompt(tokens):
    ids = torch.tensor([tokens], device=test_device())
    return ids, ORIGIN + torch.arange(len(tokens), device=test_device())[None, :]


def target_greedy(target, ids, positions, budget):
    with torch.no_grad():
        return target.generate(ids, positions, budget)


def draft_of(kind, target, drafts):
    return copy.deepcopy(target) if kind == "identical" else drafts.zeroed(target)


@pytest.mark.owner("speculative_rollback")
@pytest.mark.parametrize("kind", ["identical", "zeroed"])
def test_a_prompt_holding_token_zero_gives_the_targets_greedy_tokens(target, drafts, kind):
    ids, positions = prompt([3, 0, 7, 0, 9])
    out = sd.speculative_generate(target, draft_of(kind, target, drafts), ids, positions, 6, 2)
    assert torch.equal(out.tokens, target_greedy(target, ids, positions, 6))


@pytest.mark.owner("speculative_accounting")
@pytest.mark.parametrize("width", [1, 3])
@pytest.mark.parametrize("kind", ["identical", "zeroed"])
def test_a_budget_ending_at_the_last_position_of_both_contexts_is_served(
    target, drafts, kind, width
):
    tokens = [3, 5, 7, 1, 9]
    budget = FLOOR - (ORIGIN + len(tokens))  # the last generated token sits at position 15
    ids, positions = prompt(tokens)
    draft = FloorContext(draft_of(kind, target, drafts))
    out = sd.speculative_generate(FloorContext(target), draft, ids, positions, budget, width)
    assert torch.equal(out.tokens, target_greedy(target, ids, positions, budget))
