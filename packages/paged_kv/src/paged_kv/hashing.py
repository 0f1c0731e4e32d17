"""Chained block hashes: equal hashes mean equal prefixes.

A full block's hash digests its parent's hash, its own tokens and the namespace
(model, cache id, the request's absolute start position):

    h_0 = H(root,    tokens[0:B],   namespace, start)
    h_i = H(h_{i-1}, tokens[iB:(i+1)B], namespace, start)

so two blocks with the same tokens after different prefixes (or at another
origin, or of another model) never share a hash, and a block is found only by
walking its chain from the first block. Only full blocks are hashed: a partial
block's tokens are not final.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from arg_checks import check_str

BlockHash = bytes  # a 16-byte blake2b digest
_ROOT = b"paged_kv-root"


@dataclass(frozen=True)
class PagedNamespace:
    """Whose K/V a block holds: the model, and a logical cache (a salt) of that model."""

    model_id: str
    cache_id: str

    def __post_init__(self) -> None:
        # Hashable and digestible (block_hash encodes both): a list would be accepted here
        # and fail at the first lookup, far from the mistake.
        check_str("model_id", self.model_id, allow_empty=True)
        check_str("cache_id", self.cache_id, allow_empty=True)


def block_hash(
    parent: BlockHash | None, tokens: Sequence[int], namespace: PagedNamespace, start: int
) -> BlockHash:
    """The digest of one full block, chained through its parent's digest."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(_ROOT if parent is None else parent)
    for text in (namespace.model_id, namespace.cache_id):
        encoded = text.encode("utf-8")
        digest.update(len(encoded).to_bytes(8, "little") + encoded)  # length-prefixed: no ambiguity
    digest.update(start.to_bytes(8, "little", signed=True))
    digest.update(array("q", tokens).tobytes())
    return digest.digest()


def full_blocks(token_count: int, block_size: int) -> int:
    """How many blocks ``token_count`` tokens fill completely (a partial tail is not one)."""
    return token_count // block_size


def chain_hashes(
    tokens: Sequence[int],
    block_size: int,
    namespace: PagedNamespace,
    start: int,
    parent: BlockHash | None = None,
) -> list[BlockHash]:
    """The hash of every full block of ``tokens``, each chained to the one before."""
    hashes = []
    for index in range(full_blocks(len(tokens), block_size)):
        chunk = tokens[index * block_size : (index + 1) * block_size]
        parent = block_hash(parent, chunk, namespace, start)
        hashes.append(parent)
    return hashes
