"""The attention mask in absolute coordinates, built once per forward.

Key slot s of row b holds absolute position ``start[b] + s`` and is valid iff
``s < lengths[b]`` (lengths counted after this forward's append). A query at
absolute position q may attend to key slot s iff the slot is valid and
``start[b] + s <= q``. Comparing absolute positions (never slot or chunk
indices) is what makes a multi-token chunk after a cache exact.
"""

from __future__ import annotations

import torch
from torch import Tensor

from tinygpt import ArgumentTypeError

_LARGEST_MASK = 2**34  # booleans (16 GiB): a larger storage_length is a mistake, not a cache


def absolute_position_mask(
    query_positions: Tensor, key_starts: Tensor, key_lengths: Tensor, storage_length: int
) -> Tensor:
    """Boolean ``[B, 1, T, S]`` mask, True = may attend (SDPA convention).

    query_positions ``[B, T]``; key_starts and key_lengths ``[B]`` (lengths include
    the new tokens); every query sees at least its own key, so no row is empty.
    Checks its arguments (one host read for the values); a model's forward, whose
    inputs are already checked, calls ``position_mask`` directly.
    """
    check_mask_inputs(query_positions, key_starts, key_lengths, storage_length)
    return position_mask(query_positions, key_starts, key_lengths, storage_length)


def check_mask_inputs(
    query_positions: object, key_starts: object, key_lengths: object, storage_length: object
) -> None:
    """Long tensors [B, T], [B], [B] on one device; 0 <= start; T <= length <= storage_length;
    each row's queries at its last ``T`` key positions (so no query row is empty)."""
    if isinstance(storage_length, bool) or not isinstance(storage_length, int):
        raise ArgumentTypeError(f"storage_length must be an int, got {storage_length!r}")
    named = {
        "query_positions": query_positions,
        "key_starts": key_starts,
        "key_lengths": key_lengths,
    }
    for name, value in named.items():
        if not isinstance(value, Tensor):
            raise ArgumentTypeError(f"{name} must be a long Tensor, got {type(value).__name__}")
        if value.dtype != torch.long:
            raise ValueError(f"{name} must be torch.long, got {value.dtype}")
    assert isinstance(query_positions, Tensor)
    assert isinstance(key_starts, Tensor) and isinstance(key_lengths, Tensor)
    if query_positions.dim() != 2 or 0 in query_positions.shape:
        raise ValueError(f"query_positions must be [B, T], got {tuple(query_positions.shape)}")
    B, T = query_positions.shape
    for name, value in (("key_starts", key_starts), ("key_lengths", key_lengths)):
        if value.shape != (B,):
            raise ValueError(f"{name} must be [B]=({B},), got {tuple(value.shape)}")
        if value.device != query_positions.device:
            raise ValueError(
                f"{name} is on {value.device}, query_positions on {query_positions.device}"
            )
    if storage_length < T:
        raise ValueError(f"storage_length must be >= T={T}, got {storage_length}")
    if B * T * storage_length > _LARGEST_MASK:
        raise ValueError(f"storage_length {storage_length} makes a mask of more than 2**34 entries")
    # Each row's last T keys sit at start + length - T .. start + length - 1: the queries.
    first_query = key_starts + key_lengths - T
    offsets = torch.arange(T, device=query_positions.device)
    bad = torch.stack(
        [
            (key_starts < 0).any(),
            ((key_lengths < T) | (key_lengths > storage_length)).any(),
            (query_positions != first_query[:, None] + offsets).any(),
        ]
    ).tolist()
    messages = (
        "key_starts must be non-negative",
        f"key_lengths must lie in [T={T}, storage_length={storage_length}]",
        "query_positions must be key_starts + key_lengths - T + (0 .. T-1) in each row",
    )
    for is_bad, message in zip(bad, messages, strict=True):
        if is_bad:
            raise ValueError(message)


def position_mask(
    query_positions: Tensor, key_starts: Tensor, key_lengths: Tensor, storage_length: int
) -> Tensor:
    """``absolute_position_mask`` without the checks: the forward's inputs are validated."""
    slot = torch.arange(storage_length, device=query_positions.device)
    key_positions = key_starts[:, None] + slot[None, :]  # [B, S]
    key_valid = slot[None, :] < key_lengths[:, None]  # [B, S]
    causal = key_positions[:, None, :] <= query_positions[:, :, None]  # [B, T, S]
    return (causal & key_valid[:, None, :])[:, None]  # [B, 1, T, S]
