"""One model's functional cache over a prefix of a batch-1 sequence, with rollback."""

from __future__ import annotations

import torch
from torch import Tensor

from cache_aware_lm import CacheAwareModel, PastKeyValues


class DecodeState:
    """Caches ``sequence[:length]`` for one model; feeds the rest at absolute positions.

    ``next_logits`` (when known) predicts ``sequence[length]``: the last logits row of
    the latest call. A rollback forgets it, because the row it needs was computed for a
    token that has just been discarded or replaced.
    """

    def __init__(self, model: CacheAwareModel, start_position: int, device: torch.device) -> None:
        self.model = model
        self.start_position = start_position
        self.device = device
        self.length = 0
        self.past_key_values: PastKeyValues | None = None
        self.cache_lengths: Tensor | None = None
        self.cache_start_positions: Tensor | None = None
        self.next_logits: Tensor | None = None  # [V]

    def logits_from(self, sequence: list[int], index: int) -> Tensor:
        """Feed ``sequence[length:]``; return rows [len(sequence) + 1 - index, V].

        Row j predicts ``sequence[index + j]``; the last row predicts the token after
        the sequence. ``index`` must not precede the first row this state can give.
        """
        rows: list[Tensor] = [] if self.next_logits is None else [self.next_logits[None]]
        first_predicted = self.length if self.next_logits is not None else self.length + 1
        new_tokens = sequence[self.length :]
        if new_tokens:
            rows.append(self._feed(new_tokens))
        if index < first_predicted or not rows:
            raise RuntimeError(f"logits for position {index} were not kept")
        logits = torch.cat(rows)
        self.next_logits = logits[-1]
        return logits[index - first_predicted :]

    def rollback(self, length: int) -> None:
        """Keep only the first ``length`` cached tokens (K/V sliced, lengths reset)."""
        if self.past_key_values is None or self.cache_lengths is None:
            raise RuntimeError("nothing cached to roll back")
        self.past_key_values = tuple(
            (key[:, :, :length], value[:, :, :length]) for key, value in self.past_key_values
        )
        self.cache_lengths = torch.full_like(self.cache_lengths, length)
        self.length = length
        self.next_logits = None

    def _feed(self, tokens: list[int]) -> Tensor:
        T = len(tokens)
        input_ids = torch.tensor([tokens], dtype=torch.long, device=self.device)
        positions = self.start_position + self.length + torch.arange(T, device=self.device)
        output = self.model(
            input_ids,
            positions[None],
            past_key_values=self.past_key_values,
            cache_lengths=self.cache_lengths,
            cache_start_positions=self.cache_start_positions,
            use_cache=True,
        )
        self.past_key_values = output.past_key_values
        self.cache_lengths = output.cache_lengths
        self.cache_start_positions = output.cache_start_positions
        self.length += T
        logits: Tensor = output.logits[0]  # [T, V]
        return logits
