"""One request's block table: which physical block holds each of its logical blocks.

Token at absolute position p of a request starting at ``start`` lives in

    slot(p) = block_table[(p - start) // block_size] * block_size + (p - start) % block_size

(a flat slot of the pool). The table also keeps what the prefix cache needs:
the tokens whose K/V are stored and the chained hash of every full block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from .hashing import BlockHash, PagedNamespace


@dataclass
class BlockTable:
    """A request's blocks, stored tokens (``length`` of them) and full-block hashes."""

    namespace: PagedNamespace
    start: int
    blocks: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    hashes: list[BlockHash] = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.tokens)

    def copy(self) -> BlockTable:
        return BlockTable(
            self.namespace, self.start, list(self.blocks), list(self.tokens), list(self.hashes)
        )


def slot_of(table: BlockTable, position: int, block_size: int) -> int:
    """The flat pool slot of absolute ``position`` (the slot formula, once)."""
    offset = position - table.start
    return table.blocks[offset // block_size] * block_size + offset % block_size


def slots_of(
    table: BlockTable, positions: list[int], block_size: int, device: torch.device | None
) -> Tensor:
    """Flat slots of several positions, as a long tensor."""
    slots = [slot_of(table, position, block_size) for position in positions]
    return torch.tensor(slots, dtype=torch.long, device=device)
