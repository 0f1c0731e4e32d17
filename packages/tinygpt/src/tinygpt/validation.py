"""Input checks at the model boundary, done once per call: each raises a naming ValueError."""

from __future__ import annotations

import torch
from torch import Tensor

from .attention import PastKeyValues
from .config import GPTConfig
from .errors import ArgumentTypeError, type_name

IGNORE_INDEX = -100


def validate_input_ids(
    input_ids: Tensor, config: GPTConfig, device: torch.device
) -> tuple[int, int]:
    """input_ids must be a long [B, T] tensor on the model's device with in-vocab ids."""
    if not isinstance(input_ids, Tensor):
        raise ArgumentTypeError(f"input_ids must be a Tensor, got {type_name(input_ids)}")
    if input_ids.dtype != torch.long:
        raise ValueError(f"input_ids must be torch.long, got {input_ids.dtype}")
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must be [B, T], got shape {tuple(input_ids.shape)}")
    B, T = input_ids.shape
    if B < 1 or T < 1:
        raise ValueError(f"input_ids needs B >= 1 and T >= 1, got shape {(B, T)}")
    if input_ids.device != device:
        raise ValueError(f"input_ids is on {input_ids.device}, the model is on {device}")
    low, high = int(input_ids.min()), int(input_ids.max())
    if low < 0 or high >= config.vocab_size:
        raise ValueError(
            f"input_ids must lie in [0, {config.vocab_size}), got values in [{low}, {high}]"
        )
    return B, T


def validate_labels(labels: Tensor, input_ids: Tensor, config: GPTConfig) -> None:
    """labels: long, the shape and device of input_ids, each -100 or a vocabulary id."""
    if not isinstance(labels, Tensor):
        raise ArgumentTypeError(f"labels must be a torch.long Tensor, got {type_name(labels)}")
    if labels.dtype != torch.long:
        raise ValueError(f"labels must be torch.long, got {labels.dtype}")
    if labels.shape != input_ids.shape or labels.device != input_ids.device:
        raise ValueError(
            f"labels must match input_ids {tuple(input_ids.shape)} on {input_ids.device}, "
            f"got {tuple(labels.shape)} on {labels.device}"
        )
    invalid = (labels != IGNORE_INDEX) & ((labels < 0) | (labels >= config.vocab_size))
    if bool(invalid.any()):
        raise ValueError(f"labels must be -100 or lie in [0, {config.vocab_size})")


def validate_past_key_values(
    past_key_values: PastKeyValues,
    config: GPTConfig,
    batch_size: int,
    dtype: torch.dtype,
    device: torch.device,
) -> int:
    """Check a functional cache against the model; return its shared length S."""
    if not isinstance(past_key_values, tuple):
        raise ArgumentTypeError(
            f"past_key_values must be a tuple of pairs, got {type_name(past_key_values)}"
        )
    if len(past_key_values) != config.n_layers:
        raise ValueError(
            f"past_key_values has {len(past_key_values)} layers, the model has {config.n_layers}"
        )
    H, D = config.n_heads, config.head_dim
    lengths = set()
    for index, pair in enumerate(past_key_values):
        if not isinstance(pair, tuple):
            raise ArgumentTypeError(
                f"past_key_values[{index}] must be a (key, value) tuple, got {type_name(pair)}"
            )
        if len(pair) != 2:
            raise ValueError(
                f"past_key_values[{index}] must be a (key, value) pair, got {len(pair)}"
            )
        for name, tensor in zip(("key", "value"), pair, strict=True):
            where = f"past_key_values[{index}] {name}"
            if not isinstance(tensor, Tensor):
                raise ArgumentTypeError(f"{where} must be a Tensor, got {type_name(tensor)}")
            if tensor.dim() != 4:
                raise ValueError(f"{where} must be a 4-d [B, H, S, D] tensor")
            b, h, s, d = tensor.shape
            if (b, h, d) != (batch_size, H, D):
                raise ValueError(
                    f"{where} has shape {tuple(tensor.shape)}; expected "
                    f"[{batch_size}, {H}, S, {D}] (batch, heads, length, head dim)"
                )
            if tensor.dtype != dtype:
                raise ValueError(f"{where} has dtype {tensor.dtype}, the model uses {dtype}")
            if tensor.device != device:
                raise ValueError(f"{where} is on {tensor.device}, the model is on {device}")
            lengths.add(s)
    if len(lengths) != 1:
        raise ValueError(
            f"past_key_values: every key and value must share one length S, got {sorted(lengths)}"
        )
    return lengths.pop()


def check_flag(name: str, value: object) -> None:
    """A switch such as use_cache: a bool, never a tensor or a truthy stand-in."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be a bool, got {type_name(value)}")


def check_context_length(total_tokens: int, config: GPTConfig, what: str) -> None:
    if total_tokens > config.context_length:
        raise ValueError(
            f"{what} = {total_tokens} tokens exceeds the context length {config.context_length}"
        )


__all__ = [
    "IGNORE_INDEX",
    "check_context_length",
    "check_flag",
    "validate_input_ids",
    "validate_labels",
    "validate_past_key_values",
]
