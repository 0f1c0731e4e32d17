"""Greedy speculative decoding with compiled static-shape calls: two graphs per round.

``serve_speculative_generate`` (serving.py) makes k + 1 eager model calls a round, each
paying Python dispatch for every op and a host sync for every draft token. Here both
models keep their K/V in a ``cache_aware_lm.StaticKV`` and a round is:

- ONE draft call: ``greedy_chain`` unrolls the k draft steps into one compiled graph
  (argmax on the device, each choice fed back; no host sync between proposals);
- ONE target call: the newest token and the k proposals in one static ``[1, k + 1]``
  forward, argmax on the device;
- ONE host read of both results, then the reference's decisions in Python (budget caps
  the proposals, proposals stop after EOS, the bonus needs budget and no proposed EOS),
  so tokens and counts equal ``speculative_generate``'s.

Rollback is the next round's first slot: both caches hold the K/V of
``sequence[:-1]`` at the start of a round (the newest token is fed by the round);
slots beyond are stale and masked out until overwritten. When every proposal is
accepted the draft lacks the last one's K/V; one compiled draft step feeds it.

Batch 1. The graphs always run k proposals, so the capacity must hold the prompt,
the budget and k - 1 slots of headroom (``capacity >= T + max_new_tokens + k - 1``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import Tensor

from cache_aware_lm import ServableModel, StaticKV, compile_static, default_mode

from .generate import SpeculativeOutput
from .validation import check_request

Step = Callable[[Tensor, Tensor, Tensor], Tensor]
Chain = Callable[[Tensor, Tensor, Tensor, int], Tensor]


class CompiledSpeculativeDecoder:
    """Target and draft over static caches of ``capacity`` slots, ``width`` proposals a round.

    ``compile=False`` runs the same static calls eagerly (this path's own reference).
    The first ``generate`` (or ``warm_up``) compiles; ``compile_seconds`` records it.
    """

    def __init__(
        self,
        target: ServableModel,
        draft: ServableModel,
        capacity: int,
        width: int,
        *,
        compile: bool = True,
        mode: str | None = None,
    ) -> None:
        if isinstance(width, bool) or not isinstance(width, int) or width <= 0:
            raise ValueError(f"width must be a positive int, got {width!r}")
        if target.geometry.vocab_size != draft.geometry.vocab_size:
            raise ValueError(
                f"target and draft vocabularies differ: {target.geometry.vocab_size} vs "
                f"{draft.geometry.vocab_size}"
            )
        self.target, self.draft = target, draft
        self.target_kv = StaticKV(target, 1, capacity)
        self.draft_kv = StaticKV(draft, 1, capacity)
        self.width = width
        self.mode = mode or default_mode(target.geometry.device)
        self.compile_seconds: float | None = None
        self._verify: Step = self.target_kv.forward
        self._propose: Chain = self.draft_kv.greedy_chain
        self._draft_step: Step = self.draft_kv.forward
        if compile:
            self._verify = compile_static(self.target_kv.forward, self.mode)
            self._propose = compile_static(self.draft_kv.greedy_chain, self.mode)
            self._draft_step = compile_static(self.draft_kv.forward, self.mode)

    @property
    def capacity(self) -> int:
        return self.target_kv.capacity

    def warm_up(self) -> float:
        """Compile (or load from the inductor cache) every graph now; returns the seconds."""
        if self.compile_seconds is None:
            device = self.target_kv.slot_S.device
            started = time.perf_counter()
            with torch.inference_mode():
                token_11 = torch.zeros(1, 1, dtype=torch.long, device=device)
                slot_1 = torch.zeros(1, dtype=torch.long, device=device)
                for offset in (0, 1):  # reduce-overhead records on the second call
                    self._propose(token_11, token_11 + offset, slot_1 + offset, self.width)
                    tokens = token_11.expand(1, self.width + 1)
                    self._verify(tokens, tokens + offset, slot_1 + offset)
                    self._draft_step(token_11, token_11 + offset, slot_1 + offset)
            self.compile_seconds = time.perf_counter() - started
        return self.compile_seconds

    def generate(
        self,
        input_ids: Tensor,
        positions: Tensor,
        max_new_tokens: int,
        eos_token_id: int | None = None,
    ) -> SpeculativeOutput:
        """``speculative_generate``'s tokens and counts for one ``[1, T]`` request.

        ValueError before anything runs for what the reference rejects, or a request
        that does not fit ``capacity`` with ``width`` slots of headroom.
        """
        check_request(
            self.target, self.draft, input_ids, positions, max_new_tokens, self.width,
            eos_token_id,
        )  # fmt: skip
        T, origin = input_ids.shape[1], int(positions[0, 0])
        # The last round may feed up to width slots past the budget's last fed token.
        needed = T + max_new_tokens + self.width - 1
        context = min(self.target.geometry.context_length, self.draft.geometry.context_length)
        if needed > self.capacity or origin + needed > context:
            raise ValueError(
                f"prompt {T} + max_new_tokens {max_new_tokens} + width {self.width} - 1 = "
                f"{needed} slots from position {origin} exceed the capacity {self.capacity} or "
                f"the context length {context}"
            )
        if max_new_tokens == 0:
            return SpeculativeOutput(input_ids.clone(), 0, 0, 0, 0)
        self.warm_up()
        with torch.inference_mode():
            if T > 1:  # both caches hold sequence[:-1]; the first round feeds the newest
                self.target_kv.prefill(input_ids[:, :-1], positions[:, :-1])
                self.draft_kv.prefill(input_ids[:, :-1], positions[:, :-1])
            return self._rounds(input_ids, origin, max_new_tokens, eos_token_id)

    def _rounds(
        self, input_ids: Tensor, origin: int, max_new_tokens: int, eos_token_id: int | None
    ) -> SpeculativeOutput:
        sequence: list[int] = input_ids[0].tolist()
        budget_end = len(sequence) + max_new_tokens
        device = input_ids.device
        proposed = accepted = verifications = 0
        while len(sequence) < budget_end:
            committed = len(sequence)
            remaining = budget_end - committed
            drafted, choices = self._round(sequence[-1], origin, committed - 1, device)
            proposals = _cut(drafted, min(self.width, remaining), eos_token_id)
            m = next((i for i, d in enumerate(proposals) if choices[i] != d), len(proposals))
            verifications, proposed, accepted = (
                verifications + 1,
                proposed + len(proposals),
                accepted + m,
            )
            sequence.extend(proposals[:m])
            if m < len(proposals):
                sequence.append(choices[m])  # the target's replacement
            elif m < remaining and eos_token_id not in proposals:
                sequence.append(choices[m])  # the bonus
                if m == self.width:  # the draft never fed its last proposal: feed it now
                    self._feed_draft(proposals[-1], origin, committed + m - 1, device)
            if eos_token_id is not None and eos_token_id in sequence[committed:]:
                break
        return SpeculativeOutput(
            tokens=torch.tensor([sequence], dtype=input_ids.dtype, device=device),
            proposed_tokens=proposed,
            accepted_draft_tokens=accepted,
            discarded_draft_tokens=proposed - accepted,
            verification_steps=verifications,
        )

    def _round(
        self, newest: int, origin: int, slot: int, device: torch.device
    ) -> tuple[list[int], list[int]]:
        """The draft's k proposals and the target's k + 1 choices, read in one host sync."""
        token_11 = torch.tensor([[newest]], device=device)
        slot_1 = torch.tensor([slot], device=device)
        position_11 = slot_1[None] + origin
        drafted_1K = self._propose(token_11, position_11, slot_1, self.width)
        tokens_1K1 = torch.cat([token_11, drafted_1K], dim=1)
        offsets_K1 = torch.arange(self.width + 1, device=device)
        choices_1K1 = self._verify(tokens_1K1, position_11 + offsets_K1, slot_1).argmax(dim=-1)
        both = torch.cat([drafted_1K, choices_1K1], dim=1)[0].tolist()
        return both[: self.width], both[self.width :]

    def _feed_draft(self, token: int, origin: int, slot: int, device: torch.device) -> None:
        slot_1 = torch.tensor([slot], device=device)
        self._draft_step(torch.tensor([[token]], device=device), slot_1[None] + origin, slot_1)


def _cut(drafted: list[int], count: int, eos_token_id: int | None) -> list[int]:
    """The first ``count`` proposals, stopping right after an EOS (the reference's rule)."""
    proposals = drafted[:count]
    if eos_token_id is not None and eos_token_id in proposals:
        proposals = proposals[: proposals.index(eos_token_id) + 1]
    return proposals


__all__ = ["CompiledSpeculativeDecoder"]
