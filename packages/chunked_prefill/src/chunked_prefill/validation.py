"""Boundary checks of a chunked prefill, done once before the first chunk.

A wrong kind of object is a TypeError, a wrong value, shape, dtype or device a
ValueError; each message names the argument. Everything inside a given cache is
the model's to validate (it sees it on the first call): this package cannot know
the model's layers, heads or vocabulary.
"""

from __future__ import annotations

import torch
from torch import Tensor

# No prompt a model can hold needs more calls than this; beyond it the split itself
# would exhaust memory (a tuple of 2**62 sizes) instead of failing.
MAX_CHUNKS = 2**24


def check_int(name: str, value: object, minimum: int) -> int:
    # bool is an int subclass; True must not pass as a width of 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_chunk_count(T: int, chunk_size: int) -> None:
    count = -(-T // chunk_size)
    if count > MAX_CHUNKS:
        raise ValueError(
            f"T={T} in chunks of chunk_size={chunk_size} needs {count} chunks, "
            f"more than {MAX_CHUNKS}"
        )


def _check_long_tensor(name: str, value: object) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype != torch.long:
        raise ValueError(f"{name} must be torch.long, got {value.dtype}")
    return value


def check_prompt(model: object, input_ids: object, positions: object, chunk_size: object) -> None:
    """model callable; input_ids, positions long [B, T] on one device; positions step 1."""
    if not callable(model):
        raise TypeError(f"model must be callable, got {type(model).__name__}")
    check_int("chunk_size", chunk_size, 1)
    ids = _check_long_tensor("input_ids", input_ids)
    if ids.dim() != 2 or ids.shape[0] == 0 or ids.shape[1] == 0:
        raise ValueError(f"input_ids must be [B, T] with B, T >= 1, got {tuple(ids.shape)}")
    where = _check_long_tensor("positions", positions)
    if where.shape != ids.shape:
        raise ValueError(f"positions {tuple(where.shape)} must match input_ids {tuple(ids.shape)}")
    if where.device != ids.device:
        raise ValueError(f"positions are on {where.device}, input_ids on {ids.device}")
    check_positions(where)


def check_positions(positions: Tensor) -> None:
    """Each row: non-negative, step 1, no int64 wraparound (one host sync).

    A step of 1 between int64 neighbours also holds across 2**63 - 1 -> -2**63, so the
    row's last position must also be its first plus T - 1 without wrapping: from a
    non-negative first position, a wrapped row ends below its start.
    """
    first, last = positions[:, 0], positions[:, -1]
    bad = (
        (positions[:, 1:] - positions[:, :-1] != 1).any() | (first < 0).any() | (last < first).any()
    )
    if bool(bad):
        raise ValueError(
            "positions must be non-negative and contiguous (step 1) within each row, "
            f"without int64 wraparound; rows start at {first.tolist()}"
        )


def check_cache_kinds(
    past_key_values: object, cache_lengths: object, cache_start_positions: object
) -> None:
    """Only the kinds: shapes, lengths and gaps are the model's (its first call checks)."""
    if past_key_values is not None and not isinstance(past_key_values, tuple | list):
        raise TypeError(
            f"past_key_values must be a tuple of (key, value) pairs or None, "
            f"got {type(past_key_values).__name__}"
        )
    for name, value in (
        ("cache_lengths", cache_lengths),
        ("cache_start_positions", cache_start_positions),
    ):
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor or None, got {type(value).__name__}")
