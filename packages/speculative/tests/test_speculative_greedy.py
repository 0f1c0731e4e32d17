"""Greedy draft-and-verify emits exactly the target's greedy tokens, with exact accounting.

The oracle for tokens is the target's own ``generate``. Drafts: an identical copy
(everything accepted), a zero-weight copy (proposes token 0, nearly always
rejected) and a scripted copy that disagrees at chosen generated indices, whose
round-by-round accounting is worked out by hand below.
"""

from __future__ import annotations

import copy

import pytest
import torch

from gptlab_testkit import candidate, shares_storage, test_device
from gptlab_testkit.models import cache_aware_modules

sd = candidate("SPECULATIVE_DECODING_MODULE")
MODULES = cache_aware_modules()

pytestmark = pytest.mark.contract

PROMPT = [3, 5, 7, 1, 9]
ORIGIN = 1  # the prompt sits at absolute positions 1..5
LAST = ORIGIN + len(PROMPT) - 1
# make_test_model() promises positions 0..15 and the target's generate rejects a generated
# token whose position would reach its context, so a budget may reach position 15 only.
BUDGET = 15 - LAST


@pytest.fixture(scope="module", params=list(MODULES), ids=list(MODULES))
def lm(request):
    return MODULES[request.param]


@pytest.fixture(scope="module")
def target(lm):
    return lm.make_test_model().to(test_device())


def prompt(tokens=PROMPT, origin=ORIGIN):
    ids = torch.tensor([tokens], device=test_device())
    return ids, origin + torch.arange(len(tokens), device=test_device())[None, :]


def target_greedy(target, ids, positions, budget, eos_token_id=None):
    with torch.no_grad():
        return target.generate(ids, positions, budget, eos_token_id=eos_token_id)


def accounting(out):
    return (
        out.verification_steps,
        out.proposed_tokens,
        out.accepted_draft_tokens,
        out.discarded_draft_tokens,
    )


@pytest.mark.owner("speculative_accounting")
@pytest.mark.parametrize("width", [1, 2, 3])
def test_identical_draft_gives_target_greedy_with_every_proposal_accepted(target, width):
    ids, positions = prompt()
    out = sd.speculative_generate(target, copy.deepcopy(target), ids, positions, BUDGET, width)
    assert torch.equal(out.tokens, target_greedy(target, ids, positions, BUDGET))
    assert out.proposed_tokens > 0
    assert out.accepted_draft_tokens == out.proposed_tokens
    assert out.discarded_draft_tokens == 0
    assert out.acceptance_rate == 1.0


@pytest.mark.owner("speculative_rollback")
@pytest.mark.parametrize("width", [1, 2, 3])
def test_useless_draft_is_rejected_rolled_back_and_output_is_still_the_targets(
    target, drafts, width
):
    ids, positions = prompt()
    expected = target_greedy(target, ids, positions, BUDGET)
    out = sd.speculative_generate(target, drafts.zeroed(target), ids, positions, BUDGET, width)
    assert torch.equal(out.tokens, expected)
    # The zero draft always proposes token 0; only a target token 0 can accept it.
    assert out.discarded_draft_tokens > 0
    assert out.proposed_tokens == out.accepted_draft_tokens + out.discarded_draft_tokens
    assert out.acceptance_rate == pytest.approx(out.accepted_draft_tokens / out.proposed_tokens)


# The scripted draft is wrong at generated indices 1, 4 and 5 of a 10-token budget.
# Walking the rounds (k = min(width, remaining); m = accepted; +1 target token):
#   width 1: [0 ok +bonus 1] [2 ok +bonus 3] [4 x] [5 x] [6 ok +bonus 7] [8 ok +bonus 9]
#   width 2: [0 ok, 1 x] [2, 3 ok +bonus 4] [5 x] [6, 7 ok +bonus 8] [9 ok, budget spent]
#   width 3: [0 ok, 1 x] [2, 3 ok, 4 x] [5 x] [6, 7, 8 ok +bonus 9]
#   width 4: [0 ok, 1 x] [2, 3 ok, 4 x] [5 x] [6, 7, 8, 9 ok, no room for a bonus]
WRONG_INDICES = (1, 4, 5)
SCRIPTED_ROUNDS = {  # width: (verification steps, proposed, accepted, discarded)
    1: (6, 6, 4, 2),
    2: (5, 9, 6, 3),
    3: (4, 12, 6, 6),
    4: (4, 16, 7, 9),
}


def scripted_generate(target, drafts, width):
    """The prompt with a 10-token budget, drafted by the script wrong at WRONG_INDICES."""
    ids, positions = prompt()
    draft = drafts.scripted(target, [LAST + index for index in WRONG_INDICES])
    return sd.speculative_generate(target, draft, ids, positions, 10, width)


@pytest.mark.owner("speculative_rollback")
@pytest.mark.parametrize("width", sorted(SCRIPTED_ROUNDS))
def test_partial_acceptance_keeps_the_accepted_prefix_and_the_targets_token(target, drafts, width):
    out = scripted_generate(target, drafts, width)
    ids, positions = prompt()
    assert torch.equal(out.tokens, target_greedy(target, ids, positions, 10))


@pytest.mark.owner("speculative_accounting")
@pytest.mark.parametrize("width", sorted(SCRIPTED_ROUNDS))
def test_partial_acceptance_accounting_follows_the_rounds(target, drafts, width):
    out = scripted_generate(target, drafts, width)
    assert accounting(out) == SCRIPTED_ROUNDS[width]
    _, proposed, accepted, _ = SCRIPTED_ROUNDS[width]
    assert out.acceptance_rate == pytest.approx(accepted / proposed)


# Identical draft, width 3: each round proposes min(3, remaining) and, if budget is
# left after them, adds the target's bonus token (not counted as proposed).
BONUS_ROUNDS = {  # budget: (verification steps, proposed)
    3: (1, 3),  # one full round uses the budget: no bonus
    4: (1, 3),  # one full round plus its bonus
    5: (2, 4),
    7: (2, 6),  # round 1 + bonus, round 2 ends exactly at the budget: no bonus
    8: (2, 6),  # two full rounds, each with its bonus
}


@pytest.mark.owner("speculative_accounting")
@pytest.mark.parametrize("budget", sorted(BONUS_ROUNDS))
def test_bonus_token_only_while_budget_remains(target, budget):
    ids, positions = prompt()
    out = sd.speculative_generate(target, copy.deepcopy(target), ids, positions, budget, 3)
    assert out.tokens.shape == (1, len(PROMPT) + budget)
    assert torch.equal(out.tokens, target_greedy(target, ids, positions, budget))
    steps, proposed = BONUS_ROUNDS[budget]
    assert (out.verification_steps, out.proposed_tokens) == (steps, proposed)
    assert out.accepted_draft_tokens == proposed


@pytest.fixture(scope="module")
def eos_target(lm):
    return lm.make_eos_test_model().to(test_device())


def eos_generate(target, draft, width):
    """From [2] at position 0 with EOS 0 (greedy: 3, then EOS), a budget of 4.

    The documented transition of make_eos_test_model() (4 new tokens), no more."""
    ids, positions = prompt([2], origin=0)
    return sd.speculative_generate(target, draft, ids, positions, 4, width, 0)


@pytest.mark.owner("speculative_accounting")
def test_eos_proposed_by_the_draft_ends_the_proposal_and_the_generation(eos_target):
    # The draft proposes 3, 0 and stops.
    out = eos_generate(eos_target, copy.deepcopy(eos_target), width=4)
    assert out.tokens.tolist() == [[2, 3, 0]]
    assert accounting(out) == (1, 2, 2, 0)


@pytest.mark.owner("speculative_accounting")
def test_eos_as_the_targets_bonus_token_ends_the_generation(eos_target):
    out = eos_generate(eos_target, copy.deepcopy(eos_target), width=1)
    assert out.tokens.tolist() == [[2, 3, 0]]  # 3 proposed and accepted, bonus EOS
    assert accounting(out) == (1, 1, 1, 0)


@pytest.mark.owner("speculative_accounting")
def test_eos_accepted_after_a_rejection_ends_the_generation(eos_target, drafts):
    # The zero draft proposes 0 (= EOS) alone each round: rejected for 3, then accepted.
    out = eos_generate(eos_target, drafts.zeroed(eos_target), width=3)
    assert out.tokens.tolist() == [[2, 3, 0]]
    assert accounting(out) == (2, 2, 1, 1)


@pytest.mark.owner("speculative_accounting")
def test_zero_budget_returns_a_new_prompt_tensor_and_proposes_nothing(target):
    ids, positions = prompt()
    out = sd.speculative_generate(target, copy.deepcopy(target), ids, positions, 0, 3)
    assert torch.equal(out.tokens, ids)
    assert not shares_storage(out.tokens, ids), "tokens alias the caller's input_ids"
    assert accounting(out) == (0, 0, 0, 0)
    assert out.acceptance_rate == 0.0


@pytest.mark.owner("speculative_accounting")
def test_tokens_are_a_new_tensor_on_the_prompts_device_and_dtype(target):
    ids, positions = prompt()
    out = sd.speculative_generate(target, copy.deepcopy(target), ids, positions, 3, 2)
    assert out.tokens.dtype == ids.dtype and out.tokens.device == ids.device
    assert not shares_storage(out.tokens, ids)
    assert ids.tolist() == [PROMPT], "the caller's input_ids were written"
