"""Speculative sampling is lossless in distribution (this project's extension).

Exactly: for a draft token x ~ q accepted with probability a(x) = min(1, p(x)/q(x))
and otherwise replaced by a draw from the residual r, the emitted token has law
    sum_x q(x) [a(x) 1{x} + (1 - a(x)) r],
which the rule's own functions must make equal to p, by enumeration over the
vocabulary. Statistically: whole multi-step runs on a tiny second-order table model
(cheap enough for many seeded samples) match the target's exact joint law within
a stated bound.
"""

from __future__ import annotations

import copy
import itertools
import math
from types import SimpleNamespace

import pytest
import torch

from gptlab_testkit import assert_close, candidate, test_device
from gptlab_testkit.models import cache_aware_modules

sd = candidate("SPECULATIVE_DECODING_MODULE")
MODULES = cache_aware_modules()

pytestmark = [pytest.mark.extension, pytest.mark.owner("speculative_sampling")]


def emitted_distribution(p, q):
    """Law of the first emitted token, enumerated over the draft's proposal x."""
    emitted = torch.zeros_like(p)
    residual = sd.residual_distribution(p, q)
    for x in range(p.shape[0]):
        if q[x] == 0:
            continue  # never proposed
        accept = sd.acceptance_probability(p, q, x)
        emitted[x] += q[x] * accept
        emitted += q[x] * (1 - accept) * residual
    return emitted


HAND_PAIRS = {  # name: (p, q) over a 4-token vocabulary
    "overlapping": ([0.5, 0.3, 0.2, 0.0], [0.1, 0.1, 0.4, 0.4]),
    "target_certain": ([0.0, 0.0, 1.0, 0.0], [0.25, 0.25, 0.25, 0.25]),
    "draft_certain": ([0.25, 0.25, 0.25, 0.25], [0.0, 1.0, 0.0, 0.0]),
    "identical": ([0.4, 0.3, 0.2, 0.1], [0.4, 0.3, 0.2, 0.1]),
    "disjoint": ([0.6, 0.4, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]),
}


@pytest.mark.parametrize("pair", list(HAND_PAIRS), ids=list(HAND_PAIRS))
def test_rejection_rule_emits_the_target_distribution_exactly(pair):
    p, q = (torch.tensor(values, dtype=torch.float64) for values in HAND_PAIRS[pair])
    assert_close(emitted_distribution(p, q), p, f"emitted law for {pair}", atol=1e-12)


@pytest.mark.parametrize("lm", list(MODULES.values()), ids=list(MODULES))
def test_rejection_rule_is_exact_for_model_distributions(lm):
    target = lm.make_test_model()
    draft = copy.deepcopy(target)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in draft.parameters():
            parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator))
        ids, positions = torch.tensor([[3, 5, 7, 1]]), torch.arange(4)[None, :]
        p = torch.softmax(target(ids, positions).logits[0, -1].double() / 2.0, dim=-1)
        q = torch.softmax(draft(ids, positions).logits[0, -1].double() / 2.0, dim=-1)
    assert 0.5 * float((p - q).abs().sum()) > 0.05, "draft too close to show anything"
    assert_close(emitted_distribution(p, q), p, "emitted law", atol=1e-12)


class SecondOrderTable:
    """A tiny cache-aware LM for batch 1: next-token logits = table[token t-1, token t].

    Its cache stores the tokens themselves (one head of width 1), so a prediction
    reads the cache and a cache that was not rolled back changes what it predicts.
    """

    def __init__(self, table_VVV):
        self.table = table_VVV

    def __call__(
        self,
        input_ids,
        positions,
        past_key_values=None,
        cache_lengths=None,
        cache_start_positions=None,
        use_cache=False,
    ):
        T = input_ids.shape[1]
        if past_key_values is None:
            history, starts = input_ids[:, :0], positions[:, 0]
        else:
            length = int(cache_lengths[0])
            assert int(positions[0, 0]) == int(cache_start_positions[0]) + length, "position gap"
            history = past_key_values[0][0][:, 0, :length, 0].long()
            starts = cache_start_positions
        tokens = torch.cat([history, input_ids], dim=1)[0]
        previous = torch.cat([tokens[:1], tokens])[-T - 1 : -1]  # the first token sees itself
        logits = self.table[previous, tokens[-T:]][None]
        if not use_cache:
            return SimpleNamespace(
                logits=logits, past_key_values=None, cache_lengths=None, cache_start_positions=None
            )
        cache = tokens.to(self.table.dtype)[None, None, :, None]
        return SimpleNamespace(
            logits=logits,
            past_key_values=((cache, cache),),
            cache_lengths=torch.tensor([tokens.shape[0]]),
            cache_start_positions=starts,
        )


VOCAB, STEPS, SAMPLES, DELTA = 4, 3, 600, 1e-3
TEMPERATURE = 2.0


def exact_joint(model, prompt):
    """P(x_1..x_STEPS) under ancestral sampling from ``model``, by enumeration."""
    joint = {}
    for sequence in itertools.product(range(VOCAB), repeat=STEPS):
        probability, context = 1.0, list(prompt)
        for token in sequence:
            ids = torch.tensor([context])
            logits = model(ids, torch.arange(len(context))[None, :]).logits[0, -1]
            probability *= float(torch.softmax(logits / TEMPERATURE, dim=-1)[token])
            context.append(token)
        joint[sequence] = probability
    return joint


# A near draft (target + noise) is often fully accepted, so bonus tokens are drawn; a
# far draft (independent table) is mostly rejected, so residual draws dominate.
DRAFTS = {"near_width_2": (0.5, 2), "far_width_3": (None, 3)}


@pytest.mark.parametrize("draft_kind", list(DRAFTS))
def test_sampled_runs_follow_the_targets_joint_law_within_the_bound(draft_kind):
    nearness, width = DRAFTS[draft_kind]
    generator = torch.Generator().manual_seed(1)
    target_table = 2.0 * torch.randn(VOCAB, VOCAB, VOCAB, generator=generator)
    noise = 2.0 * torch.randn(VOCAB, VOCAB, VOCAB, generator=generator)
    target = SecondOrderTable(target_table)
    draft = SecondOrderTable(noise if nearness is None else target_table + nearness * noise)
    prompt = [1, 2]
    joint = exact_joint(target, prompt)

    counts = dict.fromkeys(joint, 0)
    sampler = torch.Generator().manual_seed(2)
    ids, positions = torch.tensor([prompt]), torch.arange(len(prompt))[None, :]
    for _ in range(SAMPLES):
        out = sd.speculative_sample(
            target, draft, ids, positions, STEPS, width, temperature=TEMPERATURE, generator=sampler
        )
        counts[tuple(out.tokens[0, len(prompt) :].tolist())] += 1

    # E[TV] <= 1/2 sum_s sqrt(p_s (1 - p_s) / N) (Jensen, cell by cell); one sample moves
    # TV by at most 1/N, so TV exceeds its mean by sqrt(ln(1/DELTA) / 2N) w.p. <= DELTA.
    distance = 0.5 * sum(abs(counts[s] / SAMPLES - p) for s, p in joint.items())
    mean_bound = 0.5 * sum(math.sqrt(p * (1 - p) / SAMPLES) for p in joint.values())
    bound = mean_bound + math.sqrt(math.log(1 / DELTA) / (2 * SAMPLES))
    assert distance <= bound, f"TV {distance:.3f} from the target's law exceeds {bound:.3f}"


@pytest.fixture(scope="module")
def target():
    return next(iter(MODULES.values())).make_test_model().to(test_device())


def sample(target, draft, seed, budget=6, width=3):
    ids = torch.tensor([[3, 5, 7, 1]], device=test_device())
    positions = torch.arange(4, device=test_device())[None, :]
    generator = torch.Generator(device=test_device()).manual_seed(seed)
    return sd.speculative_sample(
        target, draft, ids, positions, budget, width, temperature=2.0, generator=generator
    )


def test_identical_draft_is_always_accepted(target):
    for seed in range(3):
        out = sample(target, copy.deepcopy(target), seed)
        assert out.acceptance_rate == 1.0 and out.discarded_draft_tokens == 0


def test_same_seed_gives_the_same_tokens_and_accounting(target):
    draft = copy.deepcopy(target)
    with torch.no_grad():
        for parameter in draft.parameters():
            parameter.mul_(0.5)
    first, second = sample(target, draft, seed=7), sample(target, draft, seed=7)
    assert torch.equal(first.tokens, second.tokens)
    assert first.proposed_tokens == second.proposed_tokens
    assert first.accepted_draft_tokens == second.accepted_draft_tokens


@pytest.mark.parametrize("temperature", [0.0, -1.0, float("nan"), float("inf")])
def test_temperature_must_be_positive_and_finite(target, temperature):
    ids, positions = torch.tensor([[3, 5]]), torch.arange(2)[None, :]
    with pytest.raises(ValueError, match="temperature"):
        sd.speculative_sample(target, target, ids, positions, 2, 2, temperature=temperature)
