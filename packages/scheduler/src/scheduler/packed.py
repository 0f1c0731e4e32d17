"""The ONE model call of a step, packed: every row's new tokens as one sequence.

``batch.py`` pads every row to the step's widest chunk; a decode row sharing a step
with a 500-token prompt chunk then computes 499 padding positions, and the head
turns every padded position into logits. Here, through the model's serving seam
(``run_blocks`` and ``lm_head``), the step's N scheduled tokens run as ONE sequence
``[1, N]``: embeddings, norms, projections and MLPs see exactly N tokens. Attention
is the one place rows must stay apart, and ``RaggedPagedAttention`` keeps them
apart from the block pool, in place:

- each layer's new K/V go straight into the pool at the rows' reserved slots
  (``paged_kv.PagedCacheWriter`` over the whole pool), so a chunk attends to its
  own tokens like to its cached ones;
- the decode rows (one new token each) attend in small groups of similar
  context length: their contexts' slots gathered from the pool as ``[G, H_kv, L, D]``
  with a length mask, one call per group;
- each prefill chunk attends alone over its context, causal from its first new slot;
- the head runs on each row's last token only (``[R, V]``, the logits a step reads).

Same logits and stored K/V as the padded route of ``batch.forward_mixed_batch``
(tested against it, and with every pool slot NaN before the first request).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from cache_aware_lm import ServableModel, folded_grouped_query_attention
from paged_kv import PagedCacheWriter, PagedKVCache, PendingAppend

from . import checks
from .atomic import StagedWrites, abort_all


@dataclass(frozen=True)
class Chunk:
    """A prefill row: ``k`` packed tokens from ``first``, attending causally over ``slots``."""

    first: int
    k: int
    slots: Tensor  # [n + k] pool slots of the row's context (n cached, then the k new)
    visible: Tensor  # [1, 1, k, n + k]: new token i (logical slot n + i) sees slots <= n + i


@dataclass(frozen=True)
class DecodeGroup:
    """Decode rows attending together: one new token each, contexts padded to the longest."""

    index: Tensor  # [G] packed index of each row's token
    context: Tensor  # [G, L] pool slots of each row's context (padding repeats a real slot)
    visible: Tensor  # [G, 1, 1, L] True at a real context slot


@dataclass(frozen=True)
class RaggedLayout:
    """Where each row's tokens sit: in the packed sequence and in the pool.

    Row r's context is its stored tokens then its new ones, logical slots
    ``0 .. n_r + k_r - 1``; a logical slot l lives at pool slot
    ``block_table[l // block_size] * block_size + l % block_size``.
    """

    new_slots: Tensor  # [N] pool slot of each packed token
    last: Tensor  # [R] packed index of each row's last token (its logits are read)
    decodes: tuple[DecodeGroup, ...]  # the decode rows, by context length
    chunks: tuple[Chunk, ...]  # one per prefill row


def context_slots(blocks: Tensor, logical: Tensor, block_size: int) -> Tensor:
    """Pool slots of logical slots ``logical`` (``[..., L]``) through ``blocks`` (``[..., nb]``)."""
    return blocks.gather(-1, logical // block_size) * block_size + logical % block_size


def ragged_layout(
    pendings: Sequence[tuple[list[int], PendingAppend]], counts: Sequence[int], block_size: int
) -> RaggedLayout:
    """The layout of rows ``0..R-1`` (``counts[r]`` new tokens each) from their reservations.

    ``pendings`` holds (rows, reservation) per group of rows reserved together.
    """
    blocks_RB, lengths = _row_tables(pendings, len(counts))
    lengths_R = torch.tensor(lengths, dtype=torch.long)
    counts_R = torch.tensor(counts, dtype=torch.long)
    ends = torch.cumsum(counts_R, 0)

    # Every packed token: its row, and its logical slot (the row's old length onward).
    row_of = torch.repeat_interleave(torch.arange(len(counts)), counts_R)
    logical = lengths_R[row_of] - (ends[row_of] - torch.arange(int(ends[-1])))
    new_slots = context_slots(blocks_RB[row_of], logical[:, None], block_size)[:, 0]

    decode_rows = sorted((r for r, k in enumerate(counts) if k == 1), key=lengths.__getitem__)
    decodes = [
        _decode_group(group, blocks_RB, lengths_R, ends, block_size)
        for group in _length_groups(decode_rows)
    ]
    chunks = [
        _chunk(int(ends[row]) - k, k, blocks_RB[row], lengths[row], block_size)
        for row, k in enumerate(counts)
        if k > 1
    ]
    return RaggedLayout(
        new_slots=new_slots,
        last=ends - 1,
        decodes=tuple(decodes),
        chunks=tuple(chunks),
    )


def _row_tables(
    pendings: Sequence[tuple[list[int], PendingAppend]], R: int
) -> tuple[Tensor, list[int]]:
    """Block tables ``[R, widest]`` (zero-padded) and context lengths after the write."""
    tables: list[tuple[int, ...]] = [()] * R
    lengths = [0] * R
    for rows, pending in pendings:
        for position, row in enumerate(rows):
            tables[row] = pending.block_tables[position]
            lengths[row] = pending.new_lengths[position]
    widest = max(len(table) for table in tables)
    padded = [list(table) + [0] * (widest - len(table)) for table in tables]
    return torch.tensor(padded, dtype=torch.long), lengths


def _decode_group(
    group: list[int], blocks_RB: Tensor, lengths_R: Tensor, ends: Tensor, block_size: int
) -> DecodeGroup:
    """Rows ``group`` (sorted by context length) padded to the last one's context."""
    rows = torch.tensor(group, dtype=torch.long)
    lengths_G1 = lengths_R[rows, None]
    span = torch.arange(int(lengths_G1[-1]))
    # Padding repeats the row's last real slot: its own data, and masked out anyway.
    logical_GL = torch.minimum(span[None, :], lengths_G1 - 1)
    visible = (span[None, :] < lengths_G1)[:, None, None, :]
    context = context_slots(blocks_RB[rows], logical_GL, block_size)
    return DecodeGroup(ends[rows] - 1, context, visible)


def _chunk(first: int, k: int, blocks: Tensor, length: int, block_size: int) -> Chunk:
    """A prefill row's context slots and its causal mask from its first new slot."""
    span = torch.arange(length)
    cached = length - k
    visible = span[None, :] <= (cached + torch.arange(k))[:, None]
    return Chunk(first, k, context_slots(blocks, span, block_size), visible[None, None])


# Decode rows sorted by context length, in groups of about this many rows (at most
# MAX_DECODE_GROUPS groups): each group is padded to its own longest context, and a
# small group's gathered K/V stay in cache for its attention. Measured on the bench's
# 64-request workload (profiled, 1 thread): the gathers and decode attention took
# 2.1 s at 4 groups of 16 rows, 1.7 s at groups of 4 (2 or 6 rows: no better).
ROWS_PER_DECODE_GROUP = 4
MAX_DECODE_GROUPS = 16


def _length_groups(rows_by_length: list[int]) -> list[list[int]]:
    if not rows_by_length:
        return []
    count = min(MAX_DECODE_GROUPS, -(-len(rows_by_length) // ROWS_PER_DECODE_GROUP))
    size = -(-len(rows_by_length) // count)
    return [rows_by_length[i : i + size] for i in range(0, len(rows_by_length), size)]


class RaggedPagedAttention:
    """An attention kernel for the packed call: rows apart, contexts read from the pool.

    Called as the model's ``attend(query [1, H, N, D], keys, values, mask)`` with
    the whole pool from ``paged_kv.PagedCacheWriter`` as keys and values; which slot a query may see
    comes from the layout, not from ``mask`` (a placeholder).
    """

    def __init__(self, layout: RaggedLayout) -> None:
        self.layout = layout

    def __call__(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor) -> Tensor:
        key_HSD, value_HSD = keys[0], values[0]
        layout = self.layout
        out = torch.empty_like(query)
        for group in layout.decodes:
            query_d = query[0, :, group.index].transpose(0, 1)[:, :, None]  # [G, H, 1, D]
            keys_d = _gather(key_HSD, group.context)  # [G, H_kv, L, D]
            values_d = _gather(value_HSD, group.context)
            attended = folded_grouped_query_attention(query_d, keys_d, values_d, group.visible)
            out[0, :, group.index] = attended[:, :, 0].transpose(0, 1)
        for chunk in layout.chunks:
            span = slice(chunk.first, chunk.first + chunk.k)
            out[:, :, span] = folded_grouped_query_attention(
                query[:, :, span],
                _gather(key_HSD, chunk.slots[None]),
                _gather(value_HSD, chunk.slots[None]),
                chunk.visible,
            )
        return out


def _gather(pool_HSD: Tensor, slots_RL: Tensor) -> Tensor:
    """The pool's K or V at ``slots_RL``, as ``[R, H_kv, L, D]`` (``index_select``: one copy)."""
    H, _, D = pool_HSD.shape
    R, L = slots_RL.shape
    picked = pool_HSD.index_select(1, slots_RL.reshape(-1))  # [H_kv, R * L, D]
    return picked.view(H, R, L, D).transpose(0, 1)


def reserve_rows(
    cache: PagedKVCache, request_ids: Sequence[Hashable], rows: Sequence[tuple[list[int], int]]
) -> list[tuple[list[int], PendingAppend]]:
    """Reserve every row's slots, rows of equal length together (``reserve`` takes [B, T])."""
    groups: dict[int, list[int]] = {}
    for row, (tokens, _) in enumerate(rows):
        groups.setdefault(len(tokens), []).append(row)
    pendings: list[tuple[list[int], PendingAppend]] = []
    try:
        for k, members in sorted(groups.items()):
            token_ids = torch.tensor([rows[row][0] for row in members], dtype=torch.long)
            first = torch.tensor([rows[row][1] for row in members], dtype=torch.long)
            positions = first[:, None] + torch.arange(k)
            pending = cache.reserve(
                [request_ids[row] for row in members],
                token_ids.to(cache.device),
                positions.to(cache.device),
            )
            pendings.append((members, pending))
    except BaseException:
        abort_all([pending for _, pending in pendings])  # a later group failed: undo all
        raise
    return pendings


@torch.no_grad()
def forward_packed(
    model: ServableModel,
    cache: PagedKVCache,
    request_ids: Sequence[Hashable],
    rows: Sequence[tuple[list[int], int]],
    *,
    staged: StagedWrites | None = None,
) -> Tensor:
    """Run every row's new tokens as one packed sequence, store their K/V; ``[R, V]``.

    With ``staged`` the written K/V are left to the caller to commit (or abort) with
    the rest of its step; without, they are committed here. A failure changes nothing.
    """
    checks.batch_rows(request_ids, rows)
    device = cache.device
    pendings = reserve_rows(cache, request_ids, rows)
    try:
        counts = [len(tokens) for tokens, _ in rows]
        layout = ragged_layout(pendings, counts, cache.block_size)
        input_ids = torch.tensor([[t for tokens, _ in rows for t in tokens]], dtype=torch.long)
        positions = torch.cat([torch.arange(first, first + len(t)) for t, first in rows])[None]
        layout = _to(layout, device)
        pool_slots = cache.num_blocks * cache.block_size
        writer = PagedCacheWriter(cache.pool, layout.new_slots[None], pool_slots)
        attention = RaggedPagedAttention(layout)
        placeholder = torch.ones(1, 1, 1, 1, dtype=torch.bool, device=device)  # unused, see above
        hidden, _ = model.run_blocks(
            input_ids.to(device), positions.to(device), placeholder, writer, attention
        )
        logits: Tensor = model.lm_head(hidden[0, layout.last])
    except BaseException:
        abort_all([pending for _, pending in pendings])
        raise
    stage = StagedWrites() if staged is None else staged
    for _, pending in pendings:
        stage.add(pending)
    if staged is None:
        stage.commit()
    return logits


def _to(layout: RaggedLayout, device: torch.device) -> RaggedLayout:
    if device.type == "cpu":
        return layout
    return RaggedLayout(
        layout.new_slots.to(device),
        layout.last.to(device),
        tuple(
            DecodeGroup(g.index.to(device), g.context.to(device), g.visible.to(device))
            for g in layout.decodes
        ),
        tuple(Chunk(c.first, c.k, c.slots.to(device), c.visible.to(device)) for c in layout.chunks),
    )
