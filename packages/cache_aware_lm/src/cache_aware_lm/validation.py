"""Boundary checks of a cache-aware forward, done once before any compute.

Both variants share them: they differ in the cache geometry (key/value heads,
head dim) and nothing else that the boundary can see.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .output import PastKeyValues


@dataclass(frozen=True)
class ModelGeometry:
    """Everything the boundary needs to know about a model."""

    vocab_size: int
    context_length: int
    n_layers: int
    n_kv_heads: int
    head_dim: int
    dtype: torch.dtype
    device: torch.device


@dataclass(frozen=True)
class CacheState:
    """The validated cache of one forward, uniform whether or not a cache was given.

    Without a cache: ``past`` is None, ``lengths`` are zeros and ``starts`` are
    ``positions[:, 0]`` (the rows' origins).
    """

    past: PastKeyValues | None
    lengths: Tensor  # [B] long
    starts: Tensor  # [B] long


def validate_tokens(
    input_ids: object, positions: object, geometry: ModelGeometry
) -> tuple[Tensor, Tensor]:
    """input_ids and positions: long [B, T], on the model's device, in range, contiguous."""
    input_ids = _check_long_tensor("input_ids", input_ids, geometry.device)
    positions = _check_long_tensor("positions", positions, geometry.device)
    if input_ids.dim() != 2 or input_ids.shape[0] < 1 or input_ids.shape[1] < 1:
        raise ValueError(f"input_ids must be [B, T] with B, T >= 1, got {tuple(input_ids.shape)}")
    if positions.shape != input_ids.shape:
        raise ValueError(
            f"positions shape {tuple(positions.shape)} must equal input_ids shape "
            f"{tuple(input_ids.shape)}"
        )
    if bool(((input_ids < 0) | (input_ids >= geometry.vocab_size)).any()):
        raise ValueError(f"input_ids must lie in [0, vocab_size={geometry.vocab_size})")
    if bool((positions[:, 1:] - positions[:, :-1] != 1).any()):
        raise ValueError("positions must be contiguous (step 1) within each row")
    if bool((positions[:, 0] < 0).any()):
        raise ValueError("positions must be non-negative")
    if bool((positions[:, -1] >= geometry.context_length).any()):
        raise ValueError(
            f"positions exceed the context length {geometry.context_length} "
            f"(largest position {int(positions[:, -1].max())})"
        )
    return input_ids, positions


def validate_forward_inputs(
    input_ids: object,
    positions: object,
    past_key_values: object,
    cache_lengths: object,
    cache_start_positions: object,
    geometry: ModelGeometry,
) -> CacheState:
    """Check every forward input; return the cache state the model computes with."""
    input_ids, positions = validate_tokens(input_ids, positions, geometry)
    B = input_ids.shape[0]
    if past_key_values is None:
        if cache_lengths is not None or cache_start_positions is not None:
            raise ValueError(
                "cache_lengths / cache_start_positions were given without past_key_values"
            )
        origins = positions[:, 0]
        return CacheState(past=None, lengths=torch.zeros_like(origins), starts=origins)
    if cache_lengths is None or cache_start_positions is None:
        raise ValueError("past_key_values needs both cache_lengths and cache_start_positions")
    lengths = check_metadata("cache_lengths", cache_lengths, B, geometry.device)
    starts = check_metadata("cache_start_positions", cache_start_positions, B, geometry.device)
    past = check_past(past_key_values, B, geometry)
    storage_length = past[0][0].shape[2]
    if bool((lengths > storage_length).any()):
        raise ValueError(
            f"cache_lengths {lengths.tolist()} exceed the cache storage length {storage_length}"
        )
    expected_first = starts + lengths
    if not torch.equal(positions[:, 0], expected_first):
        raise ValueError(
            "position gap: positions[:, 0] must equal cache_start_positions + cache_lengths "
            f"({expected_first.tolist()}), got {positions[:, 0].tolist()}"
        )
    return CacheState(past=past, lengths=lengths, starts=starts)


def _check_long_tensor(name: str, value: object, device: torch.device) -> Tensor:
    if not isinstance(value, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype != torch.long:
        raise ValueError(f"{name} must be torch.long, got {value.dtype}")
    if value.device != device:
        raise ValueError(f"{name} is on {value.device}, the model is on {device}")
    return value


def check_metadata(name: str, value: object, batch_size: int, device: torch.device) -> Tensor:
    value = _check_long_tensor(name, value, device)
    if value.shape != (batch_size,):
        raise ValueError(f"{name} must have shape [B]=({batch_size},), got {tuple(value.shape)}")
    if bool((value < 0).any()):
        raise ValueError(f"{name} must be non-negative, got {value.tolist()}")
    return value


def check_past(
    past: object, batch_size: int, geometry: ModelGeometry, name: str = "past_key_values"
) -> PastKeyValues:
    """One (key, value) pair per layer, each [B, H_kv, S, D] with one shared S, dtype, device."""
    if not isinstance(past, tuple | list) or len(past) != geometry.n_layers:
        count = len(past) if isinstance(past, tuple | list) else type(past).__name__
        raise ValueError(
            f"{name} must hold one (key, value) pair per layer ({geometry.n_layers}), got {count}"
        )
    storage_length: int | None = None
    for index, pair in enumerate(past):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise ValueError(f"{name}[{index}] must be a (key, value) pair")
        for kind, tensor in zip(("key", "value"), pair, strict=True):
            where = f"{name}[{index}] {kind}"
            if not isinstance(tensor, Tensor):
                raise ValueError(f"{where} must be a torch.Tensor, got {type(tensor).__name__}")
            if tensor.dim() != 4:
                raise ValueError(f"{where} must be [B, H_kv, S, D], got {tuple(tensor.shape)}")
            expected = (batch_size, geometry.n_kv_heads, geometry.head_dim)
            S = tensor.shape[2]
            if (tensor.shape[0], tensor.shape[1], tensor.shape[3]) != expected:
                raise ValueError(
                    f"{where} has shape {tuple(tensor.shape)}, expected "
                    f"[{batch_size}, {geometry.n_kv_heads}, S, {geometry.head_dim}]"
                )
            if storage_length is None:
                storage_length = S
            elif storage_length != S:
                raise ValueError(f"{where} has storage length {S}, others have {storage_length}")
            if tensor.dtype != geometry.dtype:
                raise ValueError(f"{where} is {tensor.dtype}, the model uses {geometry.dtype}")
            if tensor.device != geometry.device:
                raise ValueError(f"{where} is on {tensor.device}, model on {geometry.device}")
    return tuple((pair[0], pair[1]) for pair in past)
