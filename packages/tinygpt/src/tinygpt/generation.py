"""The decode loop behind TinyGPT.generate: prefill once, then one cached token a step."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from .validation import check_context_length, validate_input_ids

if TYPE_CHECKING:
    from .model import TinyGPT


@torch.no_grad()
def generate(
    model: TinyGPT,
    input_ids: Tensor,
    max_new_tokens: int,
    temperature: float = 0.0,
    eos_token_id: int | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Prompt [B, T] plus up to max_new_tokens generated tokens, [B, T + n].

    Temperature 0 is exact argmax; > 0 draws from softmax(logits / temperature) with
    ``generator``. With EOS, a row that emitted it keeps emitting it, and the loop stops
    once every row has. Runs in eval mode and restores the caller's mode.
    """
    validate_generation_arguments(
        model, input_ids, max_new_tokens, temperature, eos_token_id, generator
    )
    if max_new_tokens == 0:
        return input_ids.clone()

    was_training = model.training
    model.eval()
    try:
        return _decode(model, input_ids, max_new_tokens, temperature, eos_token_id, generator)
    finally:
        model.train(was_training)


def _decode(
    model: TinyGPT,
    input_ids: Tensor,
    max_new_tokens: int,
    temperature: float,
    eos_token_id: int | None,
    generator: torch.Generator | None,
) -> Tensor:
    # Arguments and the whole context budget were checked once, up front: the loop runs
    # the unchecked forward.
    B = input_ids.size(0)
    finished = torch.zeros(B, dtype=torch.bool, device=input_ids.device)
    logits, past = model.logits_and_cache(input_ids)  # prefill: [B, T, V]
    new_tokens: list[Tensor] = []
    for step in range(max_new_tokens):
        next_token = choose_next_token(logits[:, -1], temperature, generator)  # [B, 1]
        if eos_token_id is not None:
            # A finished row is padded with EOS while the others catch up.
            next_token = next_token.masked_fill(finished[:, None], eos_token_id)
            finished = finished | (next_token[:, 0] == eos_token_id)
        new_tokens.append(next_token)
        if step == max_new_tokens - 1 or (eos_token_id is not None and bool(finished.all())):
            break
        logits, past = model.logits_and_cache(next_token, past)  # one token: [B, 1, V]
    return torch.cat([input_ids, *new_tokens], dim=1)


def choose_next_token(
    logits: Tensor, temperature: float, generator: torch.Generator | None
) -> Tensor:
    """[B, V] last-position logits -> [B, 1] token ids."""
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)
    probabilities = torch.softmax(logits / temperature, dim=-1)
    return torch.multinomial(probabilities, 1, generator=generator)


def validate_generation_arguments(
    model: TinyGPT,
    input_ids: Tensor,
    max_new_tokens: int,
    temperature: float,
    eos_token_id: int | None,
    generator: torch.Generator | None,
) -> None:
    """Reject bad arguments (and context overflow) before the first decode step."""
    config = model.config
    _, T = validate_input_ids(input_ids, config, model.token_embedding.weight.device)
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise ValueError(f"max_new_tokens must be an int, got {max_new_tokens!r}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if isinstance(temperature, bool) or not isinstance(temperature, int | float):
        raise ValueError(f"temperature must be a float, got {temperature!r}")
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be finite and >= 0, got {temperature}")
    if eos_token_id is not None and (
        isinstance(eos_token_id, bool)
        or not isinstance(eos_token_id, int)
        or not 0 <= eos_token_id < config.vocab_size
    ):
        raise ValueError(f"eos_token_id must be None or an id in [0, {config.vocab_size})")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    check_context_length(T + max_new_tokens, config, "prompt + max_new_tokens")


__all__ = ["choose_next_token", "generate"]
