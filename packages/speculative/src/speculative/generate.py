"""Draft-and-verify decoding for one request: greedy (lossless) and sampled (lossless in law).

Each round the draft proposes k = min(K, remaining budget) tokens one at a time,
stopping early after proposing EOS. The target scores them in ONE cached call whose
rows align as [row before d_1, row after d_1, ..., row after d_k]: row i verifies
d_{i+1}, and the last row is the bonus. At the first rejection m, the sequence keeps
d_1..d_m plus the target's replacement and both caches are rolled back to the accepted
prefix; if all k are accepted, the target's bonus token follows when budget remains.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from cache_aware_lm import CacheAwareModel

from .decode_state import DecodeState
from .rejection import _rejection_step
from .validation import check_generator, check_request, check_temperature


@dataclass(frozen=True)
class SpeculativeOutput:
    tokens: Tensor  # [1, T + generated], a new tensor
    proposed_tokens: int  # draft tokens sent to verification (bonus tokens excluded)
    accepted_draft_tokens: int
    discarded_draft_tokens: int
    verification_steps: int  # target calls that verified a proposal

    @property
    def acceptance_rate(self) -> float:
        if self.proposed_tokens == 0:
            return 0.0
        return self.accepted_draft_tokens / self.proposed_tokens


@dataclass(frozen=True)
class Proposal:
    token: int
    draft_probabilities: Tensor | None  # q [V] when the draft sampled; None when greedy


class Policy(Protocol):
    """How a draft row becomes a proposal, and how target rows judge proposals."""

    def propose(self, draft_logits: Tensor) -> Proposal: ...

    def verify(self, target_logits: Tensor, proposals: list[Proposal]) -> tuple[int, int | None]:
        """(accepted count m, the target's replacement for proposal m; None if all pass)."""
        ...

    def bonus(self, target_logits: Tensor) -> int: ...


class GreedyPolicy:
    def propose(self, draft_logits: Tensor) -> Proposal:
        return Proposal(int(draft_logits.argmax()), None)

    def verify(self, target_logits: Tensor, proposals: list[Proposal]) -> tuple[int, int | None]:
        choices = target_logits.argmax(dim=-1).tolist()
        for index, proposal in enumerate(proposals):
            if choices[index] != proposal.token:
                return index, int(choices[index])  # the target's token, never the draft's
        return len(proposals), None

    def bonus(self, target_logits: Tensor) -> int:
        return int(target_logits.argmax())


class SamplingPolicy:
    def __init__(self, temperature: float, generator: torch.Generator | None) -> None:
        self.temperature = temperature
        self.generator = generator

    def _probabilities(self, logits: Tensor) -> Tensor:
        # Shift by the row maximum before dividing, in float64: logits / 1e-45 would
        # overflow to inf (and inf - inf is NaN); shifted, the maximum stays 0 and the
        # rest go to -inf at worst, so a tiny temperature gives the argmax, not NaN.
        shifted = logits.double() - logits.double().amax(dim=-1, keepdim=True)
        return torch.softmax(shifted / self.temperature, dim=-1)

    def propose(self, draft_logits: Tensor) -> Proposal:
        q = self._probabilities(draft_logits)
        return Proposal(int(torch.multinomial(q, 1, generator=self.generator)), q)

    def verify(self, target_logits: Tensor, proposals: list[Proposal]) -> tuple[int, int | None]:
        p_rows = self._probabilities(target_logits)
        for index, proposal in enumerate(proposals):
            q = proposal.draft_probabilities
            if q is None:
                raise RuntimeError("a sampled proposal must carry the draft's distribution")
            accepted, token = _rejection_step(p_rows[index], q, proposal.token, self.generator)
            if not accepted:
                return index, token
        return len(proposals), None

    def bonus(self, target_logits: Tensor) -> int:
        p = self._probabilities(target_logits)
        return int(torch.multinomial(p, 1, generator=self.generator))


def _check_context(
    model: CacheAwareModel, name: str, input_ids: Tensor, positions: Tensor, position: int
) -> None:
    """Ask the model itself whether ``position`` is inside its context.

    A duck-typed model need not expose its context length, but a faithful one rejects
    a position beyond it with ValueError; a one-token probe asks before any decoding.
    Only a probe that fails where the same token at the prompt's own last position
    passes is a context overflow; otherwise the model's own error (about the ids, the
    device, the prompt's positions) is the truthful one and propagates unchanged.
    """
    try:
        model(input_ids[:, -1:], torch.full_like(positions[:, -1:], position))
    except ValueError as error:
        model(input_ids[:, -1:], positions[:, -1:])  # raises the model's own complaint
        raise ValueError(
            f"max_new_tokens: the budget needs position {position}, beyond the {name}'s "
            f"context length: {error}"
        ) from None


def _check_same_vocabulary(
    target_logits: Tensor, draft_logits: Tensor, eos_token_id: int | None
) -> None:
    target_vocab, draft_vocab = target_logits.shape[-1], draft_logits.shape[-1]
    if target_vocab != draft_vocab:
        raise ValueError(
            f"draft vocabulary differs from the target's: {draft_vocab} vs {target_vocab} logits"
        )
    if eos_token_id is not None and eos_token_id >= target_vocab:
        raise ValueError(f"eos_token_id {eos_token_id} is outside the vocabulary of {target_vocab}")


def _bonus_allowed(
    remaining: int, accepted: int, proposals: list[int], eos_token_id: int | None
) -> bool:
    """The bonus needs budget left after the accepted proposals, and no EOS among them."""
    return accepted < remaining and eos_token_id not in proposals


def _open_states(
    target: CacheAwareModel,
    draft: CacheAwareModel,
    input_ids: Tensor,
    positions: Tensor,
    prompt: list[int],
    span: tuple[int, int],
    eos_token_id: int | None,
) -> tuple[DecodeState, DecodeState]:
    """Check the budget against both contexts, prefill both models, compare vocabularies."""
    # The target verifies up to the last budgeted position; the draft stops one short.
    start, last_position = span  # the prompt's first position, the last budgeted one
    _check_context(target, "target", input_ids, positions, last_position)
    _check_context(draft, "draft", input_ids, positions, last_position - 1)
    device = input_ids.device
    target_state = DecodeState(target, start, device)
    draft_state = DecodeState(draft, start, device)
    _check_same_vocabulary(
        target_state.logits_from(prompt, len(prompt)),
        draft_state.logits_from(prompt, len(prompt)),
        eos_token_id,
    )
    return target_state, draft_state


def _propose(
    draft_state: DecodeState,
    sequence: list[int],
    count: int,
    policy: Policy,
    eos_token_id: int | None,
) -> list[Proposal]:
    """Up to ``count`` draft tokens, one draft row each, stopping right after EOS."""
    proposals: list[Proposal] = []
    while len(proposals) < count:
        context = sequence + [proposal.token for proposal in proposals]
        proposals.append(policy.propose(draft_state.logits_from(context, len(context))[0]))
        if proposals[-1].token == eos_token_id:
            break
    return proposals


@torch.no_grad()
def _draft_and_verify(
    policy: Policy,
    target: CacheAwareModel,
    draft: CacheAwareModel,
    input_ids: Tensor,
    positions: Tensor,
    max_new_tokens: int,
    num_speculative_tokens: int,
    eos_token_id: int | None,
) -> SpeculativeOutput:
    """The decode loop both public functions run (no autograd), with their ``policy``."""
    prompt, row = check_request(
        target, draft, input_ids, positions, max_new_tokens, num_speculative_tokens, eos_token_id
    )
    if max_new_tokens == 0:
        return SpeculativeOutput(input_ids.clone(), 0, 0, 0, 0)
    target_state, draft_state = _open_states(
        target,
        draft,
        input_ids,
        positions,
        prompt,
        (row[0], row[-1] + max_new_tokens),
        eos_token_id,
    )
    sequence = list(prompt)
    budget_end = len(sequence) + max_new_tokens
    proposed = accepted = verifications = 0
    while len(sequence) < budget_end:
        remaining, committed = budget_end - len(sequence), len(sequence)
        proposals = _propose(
            draft_state, sequence, min(num_speculative_tokens, remaining), policy, eos_token_id
        )
        tokens = [proposal.token for proposal in proposals]
        # One target call; its rows predict sequence[committed], ..., and the bonus position.
        target_rows = target_state.logits_from(sequence + tokens, committed)
        m, replacement = policy.verify(target_rows, proposals)
        verifications, proposed, accepted = verifications + 1, proposed + len(tokens), accepted + m
        sequence.extend(tokens[:m])
        if replacement is not None:
            target_state.rollback(committed + m)
            draft_state.rollback(min(draft_state.length, committed + m))
            sequence.append(replacement)
        elif _bonus_allowed(remaining, m, tokens, eos_token_id):
            sequence.append(policy.bonus(target_rows[m]))
        if eos_token_id is not None and eos_token_id in sequence[committed:]:
            break
    return SpeculativeOutput(
        tokens=torch.tensor([sequence], dtype=input_ids.dtype, device=input_ids.device),
        proposed_tokens=proposed,
        accepted_draft_tokens=accepted,
        discarded_draft_tokens=proposed - accepted,
        verification_steps=verifications,
    )


def speculative_generate(
    target: CacheAwareModel,
    draft: CacheAwareModel,
    input_ids: Tensor,
    positions: Tensor,
    max_new_tokens: int,
    num_speculative_tokens: int,
    eos_token_id: int | None = None,
) -> SpeculativeOutput:
    """Greedy draft-and-verify for one request; tokens equal ``target``'s greedy decoding."""
    return _draft_and_verify(
        GreedyPolicy(), target, draft, input_ids, positions, max_new_tokens,
        num_speculative_tokens, eos_token_id,
    )  # fmt: skip


def speculative_sample(
    target: CacheAwareModel,
    draft: CacheAwareModel,
    input_ids: Tensor,
    positions: Tensor,
    max_new_tokens: int,
    num_speculative_tokens: int,
    eos_token_id: int | None = None,
    *,
    temperature: float,
    generator: torch.Generator | None = None,
) -> SpeculativeOutput:
    """Speculative sampling: tokens are distributed as ancestral sampling from ``target``
    at ``temperature`` (rejection rule in ``rejection.py``), whatever the draft."""
    policy = SamplingPolicy(check_temperature(temperature), generator)
    if isinstance(input_ids, Tensor):  # otherwise the request check names input_ids
        check_generator(generator, input_ids.device)
    return _draft_and_verify(
        policy, target, draft, input_ids, positions, max_new_tokens,
        num_speculative_tokens, eos_token_id,
    )  # fmt: skip
