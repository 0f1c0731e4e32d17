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


def absolute_position_mask(
    query_positions: Tensor, key_starts: Tensor, key_lengths: Tensor, storage_length: int
) -> Tensor:
    """Boolean ``[B, 1, T, S]`` mask, True = may attend (SDPA convention).

    query_positions ``[B, T]``; key_starts and key_lengths ``[B]`` (lengths include
    the new tokens); every query sees at least its own key, so no row is empty.
    """
    slot = torch.arange(storage_length, device=query_positions.device)
    key_positions = key_starts[:, None] + slot[None, :]  # [B, S]
    key_valid = slot[None, :] < key_lengths[:, None]  # [B, S]
    causal = key_positions[:, None, :] <= query_positions[:, :, None]  # [B, T, S]
    return (causal & key_valid[:, None, :])[:, None]  # [B, 1, T, S]
