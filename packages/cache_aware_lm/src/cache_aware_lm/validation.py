"""Boundary checks of a cache-aware forward, done once before any compute.

Both variants share them: they differ in the cache geometry (key/value heads,
head dim) and nothing else that the boundary can see.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from tinygpt import ArgumentTypeError

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

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context_length", "n_layers", "n_kv_heads", "head_dim"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ArgumentTypeError(f"{name} must be an int, got {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if not isinstance(self.dtype, torch.dtype) or not self.dtype.is_floating_point:
            raise ArgumentTypeError(f"dtype must be a floating torch.dtype, got {self.dtype!r}")
        if not isinstance(self.device, torch.device):
            raise ArgumentTypeError(f"device must be a torch.device, got {self.device!r}")


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
    input_ids, positions = check_token_tensors(input_ids, positions, geometry)
    raise_first(token_value_checks(input_ids, positions, geometry))
    return input_ids, positions


def check_token_tensors(
    input_ids: object, positions: object, geometry: ModelGeometry
) -> tuple[Tensor, Tensor]:
    """Kinds, dtypes, devices and shapes of input_ids and positions (no device reads)."""
    input_ids = _check_long_tensor("input_ids", input_ids, geometry.device)
    positions = _check_long_tensor("positions", positions, geometry.device)
    if input_ids.dim() != 2 or input_ids.shape[0] < 1 or input_ids.shape[1] < 1:
        raise ValueError(f"input_ids must be [B, T] with B, T >= 1, got {tuple(input_ids.shape)}")
    if positions.shape != input_ids.shape:
        raise ValueError(
            f"positions shape {tuple(positions.shape)} must equal input_ids shape "
            f"{tuple(input_ids.shape)}"
        )
    return input_ids, positions


# A value check: (a [] bool tensor that is True when the check fails, its message).
ValueCheck = tuple[Tensor, str]


def token_value_checks(
    input_ids: Tensor, positions: Tensor, geometry: ModelGeometry
) -> list[ValueCheck]:
    """Vocabulary range, every position in [0, context), and a step of one within rows.

    Every position is range-checked (not only the first and last column), so the step
    test runs on small values and cannot wrap around int64 (2**63-1, -2**63 differ by 1).
    """
    context = geometry.context_length
    return [
        (
            ((input_ids < 0) | (input_ids >= geometry.vocab_size)).any(),
            f"input_ids must lie in [0, vocab_size={geometry.vocab_size})",
        ),
        (
            ((positions < 0) | (positions >= context)).any(),
            f"positions must lie in [0, context length {context})",
        ),
        (
            (positions[:, 1:] - positions[:, :-1] != 1).any(),
            "positions must be contiguous (step 1) within each row",
        ),
    ]


def raise_first(checks: list[ValueCheck]) -> None:
    """Read every check's flag in one host transfer; raise the first that failed."""
    if not checks:
        return
    failed = torch.stack([flag for flag, _ in checks]).tolist()
    for is_bad, (_, message) in zip(failed, checks, strict=True):
        if is_bad:
            raise ValueError(message)


def validate_forward_inputs(
    input_ids: object,
    positions: object,
    past_key_values: object,
    cache_lengths: object,
    cache_start_positions: object,
    geometry: ModelGeometry,
) -> CacheState:
    """Check every forward input; return the cache state the model computes with.

    Kinds, shapes, dtypes and devices first (no device reads), then every value check
    read back in one host transfer.
    """
    if not isinstance(geometry, ModelGeometry):
        raise ArgumentTypeError(f"geometry must be a ModelGeometry, got {type(geometry).__name__}")
    input_ids, positions = check_token_tensors(input_ids, positions, geometry)
    checks = token_value_checks(input_ids, positions, geometry)
    B = input_ids.shape[0]
    if past_key_values is None:
        if cache_lengths is not None or cache_start_positions is not None:
            raise ValueError(
                "cache_lengths / cache_start_positions were given without past_key_values"
            )
        raise_first(checks)
        origins = positions[:, 0]
        return CacheState(past=None, lengths=torch.zeros_like(origins), starts=origins)
    if cache_lengths is None or cache_start_positions is None:
        raise ValueError("past_key_values needs both cache_lengths and cache_start_positions")
    lengths = check_metadata_tensor("cache_lengths", cache_lengths, B, geometry.device)
    starts = check_metadata_tensor(
        "cache_start_positions", cache_start_positions, B, geometry.device
    )
    past = check_past(past_key_values, B, geometry)
    checks += cache_value_checks(positions, lengths, starts, past[0][0].shape[2])
    raise_first(checks)
    return CacheState(past=past, lengths=lengths, starts=starts)


def cache_value_checks(
    positions: Tensor,
    lengths: Tensor,
    starts: Tensor,
    storage_length: int,
    what: str = "cache storage length",
) -> list[ValueCheck]:
    """Non-negative metadata, lengths within the storage, and no position gap.

    Starts are bounded by the context through the gap test: positions[:, 0] (in range)
    must equal start + length with both non-negative, so no sum can wrap around.
    """
    return [
        ((lengths < 0).any(), "cache_lengths must be non-negative"),
        ((starts < 0).any(), "cache_start_positions must be non-negative"),
        (
            (lengths > storage_length).any(),
            f"cache_lengths exceed the {what} {storage_length}",
        ),
        (
            (positions[:, 0] != starts + lengths).any(),
            "position gap: positions[:, 0] must equal cache_start_positions + cache_lengths",
        ),
    ]


def _check_long_tensor(name: str, value: object, device: torch.device) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentTypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype != torch.long:
        raise ValueError(f"{name} must be torch.long, got {value.dtype}")
    if value.device != device:
        raise ValueError(f"{name} is on {value.device}, the model is on {device}")
    return value


def check_metadata_tensor(
    name: str, value: object, batch_size: int, device: torch.device
) -> Tensor:
    """A long [B] tensor on the device (its values are checked with the others)."""
    value = _check_long_tensor(name, value, device)
    if value.shape != (batch_size,):
        raise ValueError(f"{name} must have shape [B]=({batch_size},), got {tuple(value.shape)}")
    return value


def check_past(
    past: object, batch_size: int, geometry: ModelGeometry, name: str = "past_key_values"
) -> PastKeyValues:
    """One (key, value) pair per layer, each [B, H_kv, S, D] with one shared S, dtype, device."""
    if not isinstance(past, tuple | list):
        raise ArgumentTypeError(
            f"{name} must be a tuple of (key, value) pairs, got {type(past).__name__}"
        )
    if len(past) != geometry.n_layers:
        raise ValueError(
            f"{name} must hold one (key, value) pair per layer ({geometry.n_layers}), "
            f"got {len(past)}"
        )
    storage_length: int | None = None
    for index, pair in enumerate(past):
        if not isinstance(pair, tuple | list):
            raise ArgumentTypeError(
                f"{name}[{index}] must be a (key, value) pair, got {type(pair).__name__}"
            )
        if len(pair) != 2:
            raise ValueError(f"{name}[{index}] must be a (key, value) pair, got {len(pair)} items")
        for kind, tensor in zip(("key", "value"), pair, strict=True):
            where = f"{name}[{index}] {kind}"
            if not isinstance(tensor, Tensor):
                raise ArgumentTypeError(
                    f"{where} must be a torch.Tensor, got {type(tensor).__name__}"
                )
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
