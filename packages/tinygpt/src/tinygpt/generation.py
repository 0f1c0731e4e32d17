"""The decode loop behind TinyGPT.generate: prefill once, then one cached token a step."""

from __future__ import annotations

import math
from typing import Protocol

import torch
from torch import Tensor, nn

from .attention import PastKeyValues
from .config import GPTConfig
from .errors import ArgumentTypeError, type_name
from .validation import check_context_length, validate_input_ids


class DecodableModel(Protocol):
    """What the decode loop drives (TinyGPT): its config, its weights' device, the
    unchecked cached forward, and the train/eval switch. Stated here, so this module
    needs nothing from model.py, which calls it."""

    config: GPTConfig
    training: bool
    token_embedding: nn.Embedding  # its weight's device is the model's

    def logits_and_cache(
        self, input_ids: Tensor, past_key_values: PastKeyValues | None = None
    ) -> tuple[Tensor, PastKeyValues]: ...

    def eval(self) -> object: ...

    def train(self, mode: bool = True) -> object: ...


# The smallest positive temperature accepted: the smallest normal float32. Below it the
# temperature itself rounds to zero or a subnormal in the logits' dtype.
SMALLEST_TEMPERATURE = float(torch.finfo(torch.float32).tiny)
LARGEST_TEMPERATURE = float(torch.finfo(torch.float32).max)  # beyond it: not finite in fp32


@torch.no_grad()
def generate(
    model: DecodableModel,
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
    model: DecodableModel,
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
    scaled = logits / temperature
    # A tiny temperature overflows logits / temperature to inf, and softmax of a row whose
    # largest entry is infinite is NaN. Shifting by the row's max first is the same
    # distribution and stays finite; only such rows take it, so every other row keeps
    # exactly softmax(logits / temperature). No host read: torch.where picks per row.
    shifted = (logits - logits.amax(dim=-1, keepdim=True)) / temperature
    scaled = torch.where(scaled.amax(dim=-1, keepdim=True).isfinite(), scaled, shifted)
    probabilities = torch.softmax(scaled, dim=-1)
    return torch.multinomial(probabilities, 1, generator=generator)


def validate_generation_arguments(
    model: DecodableModel,
    input_ids: Tensor,
    max_new_tokens: int,
    temperature: float,
    eos_token_id: int | None,
    generator: torch.Generator | None,
) -> None:
    """Reject bad arguments (and context overflow) before the first decode step."""
    config = model.config
    device = model.token_embedding.weight.device
    _, T = validate_input_ids(input_ids, config, device)
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise ArgumentTypeError(f"max_new_tokens must be an int, got {max_new_tokens!r}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if isinstance(temperature, bool) or not isinstance(temperature, int | float):
        raise ArgumentTypeError(f"temperature must be a float, got {temperature!r}")
    if isinstance(temperature, float) and math.isnan(temperature):
        raise ValueError(f"temperature must be a number >= 0, got {temperature}")
    if temperature < 0 or temperature > LARGEST_TEMPERATURE:
        raise ValueError(f"temperature must be finite and >= 0, got {temperature}")
    if 0 < temperature < SMALLEST_TEMPERATURE:
        raise ValueError(
            f"temperature must be 0 (greedy) or >= {SMALLEST_TEMPERATURE:.3g}, got {temperature}"
        )
    if eos_token_id is not None:
        if isinstance(eos_token_id, bool) or not isinstance(eos_token_id, int):
            raise ArgumentTypeError(f"eos_token_id must be None or an int, got {eos_token_id!r}")
        if not 0 <= eos_token_id < config.vocab_size:
            raise ValueError(
                f"eos_token_id must be None or in [0, {config.vocab_size}), got {eos_token_id}"
            )
    if generator is not None:
        if not isinstance(generator, torch.Generator):
            raise ArgumentTypeError(
                f"generator must be a torch.Generator, got {type_name(generator)}"
            )
        if generator.device.type != device.type:
            raise ValueError(f"generator is on {generator.device}, the model is on {device}")
    check_context_length(T + max_new_tokens, config, "prompt + max_new_tokens")


__all__ = ["DecodableModel", "choose_next_token", "generate"]
