"""One request's life: its tokens, how many of them have K/V, and its status.

    waiting --admit--> running --EOS or max_new_tokens--> finished
       ^                  |
       +----preempt-------+   (blocks freed; recomputed later from all_tokens)

``num_computed`` counts the tokens whose K/V are in the pool. A step computes
``all_tokens[num_computed : num_computed + k]``; when that reaches the end of
``all_tokens`` the last logits yield the next token. Decode is the case k = 1
with every earlier token cached; anything else (a prompt chunk, or the
recomputation of a preempted request's prompt and output) is prefill.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable

import torch


class RequestStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


class Request:
    """A prompt, its sampling settings, and its progress (owned by the engine)."""

    def __init__(
        self,
        request_id: Hashable,
        prompt_ids: list[int],
        max_new_tokens: int,
        eos_token_id: int | None,
        temperature: float,
        seed: int,
        arrival: int,
    ) -> None:
        self.request_id = request_id
        self.prompt_ids = prompt_ids
        self.max_new_tokens = max_new_tokens
        self.eos_token_id = eos_token_id
        self.temperature = temperature
        self.arrival = arrival  # order of add_request: the waiting queue's order
        # Its own generator: a seeded draw does not depend on who shares the batch.
        self.generator = torch.Generator().manual_seed(seed)
        self.output_ids: list[int] = []
        self.num_computed = 0
        self.status = RequestStatus.WAITING

    @property
    def all_tokens(self) -> list[int]:
        """Prompt plus output: what a recomputation after preemption runs again."""
        return self.prompt_ids + self.output_ids

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_ids) + len(self.output_ids)

    @property
    def remaining(self) -> int:
        """Tokens still to compute before the next token can be sampled."""
        return self.num_tokens - self.num_computed

    @property
    def is_decode(self) -> bool:
        """Only the newest generated token is missing from the cache."""
        return bool(self.output_ids) and self.remaining == 1

    @property
    def is_finished(self) -> bool:
        if len(self.output_ids) >= self.max_new_tokens:
            return True
        return self.eos_token_id is not None and self.output_ids[-1:] == [self.eos_token_id]

    def max_stored_tokens(self) -> int:
        """Tokens whose K/V the request may ever store: the last sampled one never is."""
        return len(self.prompt_ids) + self.max_new_tokens - 1
