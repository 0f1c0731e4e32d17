"""One model's functional cache over a prefix of a batch-1 sequence, with rollback."""

from __future__ import annotations

import torch
from torch import Tensor

from cache_aware_lm import CacheAwareModel, PastKeyValues

from .validation import INT64_MAX, check_callable, check_int


class DecodeState:
    """Caches ``sequence[:length]`` for one model; feeds the rest at absolute positions.

    ``next_logits`` (when known) predicts ``sequence[length]``: the last logits row of
    the latest call. A rollback forgets it, because the row it needs was computed for a
    token that has just been discarded or replaced. Every method checks its arguments
    before touching the state, ``sequence[:length]`` included: it must be exactly the
    tokens cached (a list comparison, C speed: far below one model call).
    """

    def __init__(self, model: CacheAwareModel, start_position: int, device: torch.device) -> None:
        check_callable("model", model)
        if check_int("start_position", start_position, 0) > INT64_MAX:
            raise ValueError(f"start_position {start_position} is beyond int64")
        if not isinstance(device, torch.device | str):
            raise TypeError(f"device must be a torch.device or str, got {type(device).__name__}")
        try:
            resolved = torch.device(device)
            torch.empty(0, device=resolved)  # a device string torch parses may still be absent
        except (RuntimeError, AssertionError) as error:  # torch without CUDA asserts
            raise ValueError(f"device {device!r} is not a usable torch device: {error}") from None
        self.model = model
        self.start_position = start_position
        self.device = resolved
        self.length = 0
        self.tokens: list[int] = []  # the cached tokens: sequence[:length] of every call
        self.past_key_values: PastKeyValues | None = None
        self.cache_lengths: Tensor | None = None
        self.cache_start_positions: Tensor | None = None
        self.next_logits: Tensor | None = None  # [V]

    def logits_from(self, sequence: list[int], index: int) -> Tensor:
        """Feed ``sequence[length:]``; return rows [len(sequence) + 1 - index, V].

        Row j predicts ``sequence[index + j]``; the last row predicts the token after
        the sequence. ``index`` must not precede the first row this state can give.
        """
        first_predicted = self._check_request(sequence, index)
        rows: list[Tensor] = [] if self.next_logits is None else [self.next_logits[None]]
        new_tokens = sequence[self.length :]
        if new_tokens:
            rows.append(self._feed(new_tokens))
        logits = torch.cat(rows)
        self.next_logits = logits[-1]
        return logits[index - first_predicted :]

    def rollback(self, length: int) -> None:
        """Keep only the first ``length`` cached tokens (K/V sliced, lengths reset)."""
        check_int("length", length, 0)
        if length > self.length:
            raise ValueError(f"length {length} is beyond the {self.length} cached tokens")
        if self.past_key_values is None or self.cache_lengths is None:
            return  # nothing cached: length is 0 and there is nothing to forget
        self.past_key_values = tuple(
            (key[:, :, :length], value[:, :, :length]) for key, value in self.past_key_values
        )
        self.cache_lengths = torch.full_like(self.cache_lengths, length)
        self.length = length
        del self.tokens[length:]
        self.next_logits = None

    def _check_request(self, sequence: object, index: object) -> int:
        """The first row index this call can return; ValueError/TypeError before any feed."""
        tokens = self._check_sequence(sequence)
        first_predicted = self.length if self.next_logits is not None else self.length + 1
        last_predicted = len(tokens)  # the row after the sequence
        row = check_int("index", index, 0)
        if not first_predicted <= row <= last_predicted:
            raise ValueError(
                f"index {row} outside the rows this state can give "
                f"[{first_predicted}, {last_predicted}]"
            )
        return first_predicted

    def _check_sequence(self, sequence: object) -> list[object]:
        """A list of int token ids that extends the cached prefix (or reuses kept logits)."""
        if not isinstance(sequence, list):
            raise TypeError(f"sequence must be a list of ints, got {type(sequence).__name__}")
        if len(sequence) < self.length:
            raise ValueError(
                f"sequence has {len(sequence)} tokens, fewer than the {self.length} cached"
            )
        if sequence[: self.length] != self.tokens:
            first = next(
                i
                for i, (a, b) in enumerate(zip(sequence[: self.length], self.tokens, strict=True))
                if a != b
            )
            raise ValueError(
                f"sequence[{first}] is {sequence[first]!r} but this state cached "
                f"{self.tokens[first]!r} there: sequence must extend the {self.length} "
                "tokens cached"
            )
        if self.next_logits is None and len(sequence) == self.length:
            raise ValueError("sequence adds no token and no logits are kept for it")
        for token in sequence[self.length :]:
            if check_int("sequence token", token, 0) > INT64_MAX:
                raise ValueError(f"sequence token {token} is beyond int64")
        if self.start_position + len(sequence) - 1 > INT64_MAX:
            raise ValueError(f"sequence of {len(sequence)} tokens runs past the largest position")
        return sequence

    def _feed(self, tokens: list[int]) -> Tensor:
        T = len(tokens)
        input_ids = torch.tensor([tokens], dtype=torch.long, device=self.device)
        positions = self.start_position + self.length + torch.arange(T, device=self.device)
        try:
            output = self.model(
                input_ids,
                positions[None],
                past_key_values=self.past_key_values,
                cache_lengths=self.cache_lengths,
                cache_start_positions=self.cache_start_positions,
                use_cache=True,
            )
        except ValueError as error:  # nothing is assigned yet: the state is unchanged
            raise ValueError(
                f"sequence[{self.length}:] (at positions from "
                f"{self.start_position + self.length}) was rejected by the model: {error}"
            ) from error
        if output.past_key_values is None or output.cache_lengths is None:
            raise ValueError("model returned no cache state from a use_cache=True call")
        self.past_key_values = output.past_key_values
        self.cache_lengths = output.cache_lengths
        self.cache_start_positions = output.cache_start_positions
        self.length += T
        self.tokens.extend(tokens)
        logits: Tensor = output.logits[0]  # [T, V]
        return logits
