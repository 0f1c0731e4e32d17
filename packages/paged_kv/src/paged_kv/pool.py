"""The block pool: per layer one preallocated K and V tensor of fixed-size blocks.

Each tensor has shape ``[num_blocks, H_kv, block_size, D]``. Its memory is
head-major (allocated as ``[H_kv, num_blocks * block_size, D]``, the public
tensor is a permuted view), so one head's slots form a single run and attention
can read the whole pool as ``[H_kv, slots, D]`` without a copy. A flat slot is
``block * block_size + offset``. Nothing here ever reallocates: the tensors are
the same objects, at the same addresses, for the pool's life.
"""

from __future__ import annotations

import torch
from torch import Tensor

LayerKV = tuple[Tensor, Tensor]
PastKeyValues = tuple[LayerKV, ...]


class BlockPool:
    """``layer_count`` pairs of ``[num_blocks, H_kv, block_size, D]`` zeros."""

    def __init__(
        self,
        layer_count: int,
        num_blocks: int,
        head_count: int,
        block_size: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device | str,
    ) -> None:
        self.block_size = block_size
        shape_HSD = (head_count, num_blocks * block_size, head_dim)
        self._head_major: PastKeyValues = tuple(
            (
                torch.zeros(shape_HSD, dtype=dtype, device=device),
                torch.zeros(shape_HSD, dtype=dtype, device=device),
            )
            for _ in range(layer_count)
        )
        shape_NHBD = (head_count, num_blocks, block_size, head_dim)
        self._storage: PastKeyValues = tuple(
            (key.view(shape_NHBD).permute(1, 0, 2, 3), value.view(shape_NHBD).permute(1, 0, 2, 3))
            for key, value in self._head_major
        )

    @property
    def storage(self) -> PastKeyValues:
        """Per layer (key, value), each ``[num_blocks, H_kv, block_size, D]``."""
        return self._storage

    def slots_view(self, layer: int) -> LayerKV:
        """Layer ``layer``'s key and value as ``[H_kv, num_blocks * block_size, D]`` (views)."""
        return self._head_major[layer]

    def write(self, layer: int, slots: Tensor, key_new: Tensor, value_new: Tensor) -> None:
        """Store ``key_new[b, :, t]`` (``[B, H_kv, T, D]``) at flat slot ``slots[b, t]``."""
        key_HSD, value_HSD = self._head_major[layer]
        flat = slots.reshape(-1)
        H, D = key_new.shape[1], key_new.shape[3]
        # [B, H, T, D] -> [H, B*T, D], ordered like the flattened slots.
        key_HSD[:, flat] = key_new.transpose(0, 1).reshape(H, -1, D)
        value_HSD[:, flat] = value_new.transpose(0, 1).reshape(H, -1, D)

    def copy_block(self, source: int, target: int) -> None:
        """Copy one block's K/V, every layer (copy on write)."""
        for key, value in self._storage:
            key[target].copy_(key[source])
            value[target].copy_(value[source])

    def gather(self, layer: int, slots: Tensor) -> LayerKV:
        """New tensors ``[H_kv, len(slots), D]`` holding the K/V at these flat slots, in order."""
        key_HSD, value_HSD = self._head_major[layer]
        return key_HSD[:, slots], value_HSD[:, slots]

    @property
    def block_bytes(self) -> int:
        """Bytes one block holds across every layer, key and value."""
        key = self._storage[0][0]
        per_block = key[0].numel() * key.element_size()
        return 2 * len(self._storage) * per_block
