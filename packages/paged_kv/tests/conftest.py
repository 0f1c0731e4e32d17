"""Fixtures for the paged_kv suite (pytest loads this; tests never import it).

The oracle: K/V that behave like a causal model's. The K/V of a token depend on
the request's namespace, absolute start and every token up to and including it,
nothing else, so two requests agree on a block exactly when a paged cache may
share it. `Pool.append` feeds the candidate those K/V; `Pool.assert_stored`
checks, through `model_inputs`, that every open request still reads its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable
from functools import lru_cache

import pytest
import torch
from torch import Tensor

from gptlab_testkit import candidate, test_device

pkv = candidate("PAGED_KV_MODULE")

LAYERS, HEADS, HEAD_DIM, BLOCK = 2, 2, 3, 4


@lru_cache(maxsize=65536)
def token_kv(model_id: str, start: int, prefix: tuple[int, ...]) -> Tensor:
    """``[LAYERS, 2, HEADS, HEAD_DIM]``: the K/V of the last token of ``prefix``."""
    digest = hashlib.blake2b(repr((model_id, start, prefix)).encode(), digest_size=8).digest()
    generator = torch.Generator().manual_seed(int.from_bytes(digest, "little"))
    return torch.randn(LAYERS, 2, HEADS, HEAD_DIM, generator=generator)


class Pool:
    """A candidate PagedKVCache plus the oracle state of every open request."""

    def __init__(self, num_blocks: int, block_size: int = BLOCK) -> None:
        self.block_size = block_size
        self.num_blocks = num_blocks
        self.cache = pkv.PagedKVCache(
            LAYERS, HEADS, HEAD_DIM, num_blocks, block_size, device=test_device()
        )
        self.tokens: dict[Hashable, list[int]] = {}
        self.starts: dict[Hashable, int] = {}
        self.models: dict[Hashable, str] = {}

    @staticmethod
    def namespace(model_id: str = "m", cache_id: str = "c"):
        return pkv.PagedNamespace(model_id, cache_id)

    @property
    def block_bytes(self) -> int:
        return 2 * LAYERS * HEADS * self.block_size * HEAD_DIM * 4

    def admit(
        self, rid: Hashable, prompt: list[int], start: int = 0, model_id: str = "m", cache_id="c"
    ) -> int:
        reused = self.cache.admit(rid, prompt, self.namespace(model_id, cache_id), start)
        self.tokens[rid] = list(prompt[:reused])
        self.starts[rid] = start
        self.models[rid] = model_id
        return reused

    def fork(self, parent: Hashable, child: Hashable) -> None:
        self.cache.fork(parent, child)
        self.tokens[child] = list(self.tokens[parent])
        self.starts[child] = self.starts[parent]
        self.models[child] = self.models[parent]

    def free(self, rid: Hashable) -> None:
        self.cache.free(rid)
        for table in (self.tokens, self.starts, self.models):
            del table[rid]

    def kv_of(self, rid: Hashable, tokens: list[int]) -> Tensor:
        """``[LAYERS, 2, HEADS, len(tokens), HEAD_DIM]`` oracle K/V of a whole sequence."""
        per_token = [
            token_kv(self.models[rid], self.starts[rid], tuple(tokens[: i + 1]))
            for i in range(len(tokens))
        ]
        return torch.stack(per_token, dim=3)

    def append(self, rows: dict[Hashable, list[int]]) -> None:
        """Each request's next tokens (equal counts), with their oracle K/V, in one call."""
        ids = list(rows)
        T = len(rows[ids[0]])
        token_ids, positions, kv = [], [], []
        for rid in ids:
            old = self.tokens[rid]
            first = self.starts[rid] + len(old)
            token_ids.append(rows[rid])
            positions.append(list(range(first, first + T)))
            kv.append(self.kv_of(rid, old + rows[rid])[:, :, :, len(old) :])
        stacked = torch.stack(kv, dim=2).to(test_device())  # [LAYERS, 2, R, HEADS, T, D]
        past = tuple((stacked[layer, 0], stacked[layer, 1]) for layer in range(LAYERS))
        self.cache.append(ids, self.long(token_ids), self.long(positions), past)
        for rid in ids:
            self.tokens[rid].extend(rows[rid])

    def assert_stored(self, *rids: Hashable) -> None:
        """Every named (default: every open) request reads back exactly its own K/V."""
        rids = rids or tuple(self.tokens)
        past, lengths, starts = self.cache.model_inputs(list(rids))
        assert lengths is None or lengths.tolist() == [len(self.tokens[r]) for r in rids]
        for row, rid in enumerate(rids):
            n = len(self.tokens[rid])
            assert self.cache.cache_length(rid) == n, f"{rid}: cache_length"
            if n == 0:
                continue
            assert past is not None and starts is not None
            assert int(starts[row]) == self.starts[rid], f"{rid}: start position"
            want = self.kv_of(rid, self.tokens[rid])
            # Stored K/V are copies, never recomputed: exactly equal (and cheap to check).
            for layer, (key, value) in enumerate(past):
                assert torch.equal(key[row, :, :n].cpu(), want[layer, 0]), (
                    f"{rid} layer {layer} key"
                )
                assert torch.equal(value[row, :, :n].cpu(), want[layer, 1]), (
                    f"{rid} layer {layer} value"
                )

    def fill(self, rid: Hashable, blocks: int, seed: int) -> None:
        """Open a request of fresh tokens and write ``blocks`` full blocks to it."""
        generator = torch.Generator().manual_seed(seed)
        tokens = torch.randint(100, 10_000, (blocks * self.block_size,), generator=generator)
        self.admit(rid, [int(t) for t in tokens[:1]])
        self.append({rid: [int(t) for t in tokens]})

    def counts(self) -> tuple[int, ...]:
        """Every counter and holding of ``stats``, comparable across snapshots."""
        s = self.cache.stats
        return (
            s.hits, s.misses, s.evictions, s.cached_blocks, s.bytes_held, s.used_blocks,
            s.free_blocks,
        )  # fmt: skip

    @staticmethod
    def long(rows: list[list[int]]) -> Tensor:
        return torch.tensor(rows, dtype=torch.long, device=test_device())


@pytest.fixture
def pool() -> Pool:
    """Eight blocks of four slots, two layers, two K/V heads of dim 3."""
    return Pool(num_blocks=8)


@pytest.fixture
def make_pool() -> type[Pool]:
    """``make_pool(num_blocks, block_size=4)``: a pool of another size."""
    return Pool
