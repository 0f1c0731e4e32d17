"""Greedy generation over any cache-aware model (both variants share it)."""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor

from tinygpt import ArgumentTypeError

from .protocol import CacheAwareModel
from .validation import (
    ModelGeometry,
    ValueCheck,
    check_token_tensors,
    raise_first,
    token_value_checks,
)


class GenerativeModel(CacheAwareModel, Protocol):
    """A cache-aware model that also states its geometry and has a train/eval mode."""

    training: bool

    @property
    def geometry(self) -> ModelGeometry: ...

    def train(self, mode: bool = True) -> GenerativeModel: ...


def greedy_generate(
    model: GenerativeModel,
    input_ids: Tensor,
    positions: Tensor,
    max_new_tokens: int,
    eos_token_id: int | None = None,
) -> Tensor:
    """Prompt plus up to ``max_new_tokens`` argmax tokens, ``[B, T + n]``.

    EOS rule (as tinygpt): a row that emitted EOS keeps emitting it; the loop stops
    once every row has. The token generated k-th (from 1) sits at position
    ``positions[:, -1] + k``, which must stay below the context length: checked
    before the first step. Runs in eval mode and restores the caller's mode.
    """
    geometry = model_geometry(model, "model")
    validate_generation_request(input_ids, positions, max_new_tokens, eos_token_id, geometry)
    if max_new_tokens == 0:
        return input_ids.clone()

    was_training = model.training
    model.train(False)
    try:
        with torch.no_grad():
            return _greedy_loop(model, input_ids, positions, max_new_tokens, eos_token_id)
    finally:
        model.train(was_training)


def model_geometry(model: object, name: str) -> ModelGeometry:
    """The geometry a cache-aware model states, or an error naming the argument."""
    geometry = getattr(model, "geometry", None)
    if not isinstance(geometry, ModelGeometry) or not callable(model):
        raise ArgumentTypeError(
            f"{name} must be a cache-aware model with a geometry, got {type(model).__name__}"
        )
    return geometry


def validate_generation_request(
    input_ids: Tensor,
    positions: Tensor,
    max_new_tokens: int,
    eos_token_id: int | None,
    geometry: ModelGeometry,
) -> None:
    """Tokens, positions, budget and EOS id of one generate request (ValueError)."""
    raise_first(
        generation_request_checks(input_ids, positions, max_new_tokens, eos_token_id, geometry)
    )


def generation_request_checks(
    input_ids: object,
    positions: object,
    max_new_tokens: object,
    eos_token_id: object,
    geometry: ModelGeometry,
) -> list[ValueCheck]:
    """Check kinds, shapes and plain-Python values; return the value checks still to read.

    The k-th new token sits at ``positions[:, -1] + k``: the last one must stay below
    the context length.
    """
    input_ids, positions = check_token_tensors(input_ids, positions, geometry)
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise ArgumentTypeError(f"max_new_tokens must be an int, got {max_new_tokens!r}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if eos_token_id is not None:
        if isinstance(eos_token_id, bool) or not isinstance(eos_token_id, int):
            raise ArgumentTypeError(f"eos_token_id must be None or an int, got {eos_token_id!r}")
        if not 0 <= eos_token_id < geometry.vocab_size:
            raise ValueError(
                f"eos_token_id must be in [0, vocab_size={geometry.vocab_size}), got {eos_token_id}"
            )
    context = geometry.context_length
    beyond = (
        f"generating max_new_tokens={max_new_tokens} tokens reaches the context length {context}"
    )
    if max_new_tokens >= context:  # positions are >= 0; also keeps the sum below in int64
        raise ValueError(beyond)
    budget = ((positions[:, -1] + max_new_tokens) >= context).any()
    return [*token_value_checks(input_ids, positions, geometry), (budget, beyond)]


def _greedy_loop(
    model: GenerativeModel,
    input_ids: Tensor,
    positions: Tensor,
    max_new_tokens: int,
    eos_token_id: int | None,
) -> Tensor:
    out = model(input_ids, positions, use_cache=True)
    next_positions = positions[:, -1:] + 1
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    tokens = [input_ids]
    for step in range(max_new_tokens):
        next_token = out.logits[:, -1].argmax(dim=-1, keepdim=True)  # [B, 1]
        if eos_token_id is not None:
            next_token = next_token.masked_fill(finished[:, None], eos_token_id)
            finished = finished | (next_token[:, 0] == eos_token_id)
        tokens.append(next_token)
        if step == max_new_tokens - 1 or bool(finished.all()):
            break
        out = model(
            next_token,
            next_positions,
            past_key_values=out.past_key_values,
            cache_lengths=out.cache_lengths,
            cache_start_positions=out.cache_start_positions,
            use_cache=True,
        )
        next_positions = next_positions + 1
    return torch.cat(tokens, dim=1)
