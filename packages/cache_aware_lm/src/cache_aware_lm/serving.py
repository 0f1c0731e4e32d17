"""The serving decode path: new K/V written in place into request-owned storage.

The reference ``generate`` hands every forward a ``FunctionalCacheWriter``, which
builds a new ``[B, H_kv, S + 1, D]`` tensor per layer for every token (a copy of
the whole prefix, so a step costs O(context) in copies). ``serve_generate`` emits
the same greedy tokens, but

- K/V live in storage the request owns and this module does not: anything that
  satisfies ``RequestStorage`` (``kv_cache.KVCache`` does, structurally), i.e.
  per-layer ``[B, H_kv, capacity, D]`` tensors plus per-row lengths and starts;
- the request is validated once, before the first step (tokens, positions,
  budget, EOS id, storage geometry, capacity); the loop checks nothing and reads
  nothing back from the device except the EOS test;
- each step scatters the new K/V into ``slot = position - start`` of the storage
  (``InPlaceCacheWriter``) and attends over the stored prefix: views
  ``storage[..., :L, :]`` with ``L`` the longest row so far, mask ``slot <= query
  slot`` (the absolute-position mask in slot coordinates), and grouped-query heads
  read in place (``folded_grouped_query_attention``), so no step copies the prefix;
- at the end, the storage's lengths advance through its own ``append`` (the
  contract's only way to grow them), once per request.
"""

from __future__ import annotations

import itertools
from typing import Protocol

import torch
from torch import Tensor, nn

from tinygpt import ArgumentTypeError

from .attention import AttentionKernel, folded_grouped_query_attention, grouped_query_attention
from .cache_update import CacheWriter, check_writer_arguments
from .generation import GenerativeModel, generation_request_checks, model_geometry
from .output import LayerKV, PastKeyValues
from .validation import (
    ModelGeometry,
    ValueCheck,
    cache_value_checks,
    check_metadata_tensor,
    check_past,
    raise_first,
)


class RequestStorage(Protocol):
    """Request-owned fixed-capacity K/V storage (the ``kv_cache.KVCache`` contract).

    Row b holds ``cache_lengths[b]`` valid tokens in slots ``0..len-1`` at absolute
    positions ``cache_start_positions[b] + slot``. ``storage`` returns the same
    tensors for the storage's whole life; ``append`` writes each row's next T
    positions and grows every length by T.
    """

    @property
    def storage(self) -> PastKeyValues: ...

    @property
    def cache_lengths(self) -> Tensor: ...

    @property
    def cache_start_positions(self) -> Tensor: ...

    def append(self, past_key_values: PastKeyValues, positions: Tensor) -> None: ...


class ServableModel(GenerativeModel, Protocol):
    """A cache-aware model whose forward body can run without its per-call checks."""

    lm_head: nn.Linear

    def run_blocks(
        self,
        input_ids: Tensor,
        positions: Tensor,
        mask: Tensor,
        cache_writer: CacheWriter,
        attend: AttentionKernel = grouped_query_attention,
    ) -> tuple[Tensor, PastKeyValues]: ...


class InPlaceCacheWriter:
    """A ``CacheWriter`` over request storage: write in place, attend over the prefix.

    ``slots_BT`` are the new tokens' row-local slots (``position - start``);
    ``attend_length`` is the longest row after the write. ``write`` scatters the
    layer's new K/V into its storage tensors and returns views of their first
    ``attend_length`` slots, which the caller's mask (``slot <= query slot``) reads.
    """

    def __init__(self, storage: PastKeyValues, slots_BT: Tensor, attend_length: int) -> None:
        # Kinds and shapes only: the slot values are the caller's (serve_generate checks a
        # request once), since reading them back here would cost a device sync per step.
        if storage is None:
            raise ArgumentTypeError("storage must be a sequence of (key, value) pairs, got None")
        check_writer_arguments(
            storage, "storage", slots_BT, "slots_BT", attend_length, "attend_length"
        )
        if slots_BT.dim() != 2 or attend_length > storage[0][0].shape[2]:
            raise ValueError(
                f"slots_BT must be [B, T] and attend_length <= the capacity "
                f"{storage[0][0].shape[2]}, got {tuple(slots_BT.shape)} and {attend_length}"
            )
        self._storage = storage
        self._slots_BT = slots_BT
        self._attend_length = attend_length

    @property
    def storage_length(self) -> int:
        return self._attend_length

    def write(self, layer_index: int, key_new: Tensor, value_new: Tensor) -> LayerKV:
        key_cache, value_cache = self._storage[layer_index]
        B, H, T, D = key_new.shape
        index_BHTD = self._slots_BT[:, None, :, None].expand(B, H, T, D)  # a view, no copy
        key_cache.scatter_(2, index_BHTD, key_new)
        value_cache.scatter_(2, index_BHTD, value_new)
        L = self._attend_length
        return key_cache[:, :, :L], value_cache[:, :, :L]


def serve_generate(
    model: ServableModel,
    input_ids: Tensor,
    positions: Tensor,
    max_new_tokens: int,
    storage: RequestStorage,
    eos_token_id: int | None = None,
) -> Tensor:
    """Greedy continuation with K/V kept in ``storage``: the same tokens as ``model.generate``.

    ``storage`` already holds each row's cached prefix (possibly none, possibly
    different per row, left-aligned: row b in slots ``0..len[b]-1``) and
    ``input_ids`` / ``positions`` ``[B, T]`` continue every row:
    ``positions[:, 0] == start + len``. Returns prompt plus new tokens ``[B, T + n]``,
    EOS rule as ``generate``. Afterwards the storage holds, and its lengths count,
    everything that was fed: the prompt and every new token but the last (never fed,
    as in ``generate``); ``max_new_tokens=0`` touches nothing.

    ValueError (before anything is written) for what ``generate`` rejects, for
    storage that does not match the model (layers, batch, heads, head dim, dtype,
    device), positions that do not continue the stored rows, and a request that
    would not fit the storage capacity (``max(len) + T + max_new_tokens - 1``).
    """
    geometry = _servable_geometry(model)
    checks = generation_request_checks(input_ids, positions, max_new_tokens, eos_token_id, geometry)
    layers, lengths_B, starts_B, storage_checks = _check_storage(
        storage, input_ids, positions, geometry
    )
    raise_first(checks + storage_checks)  # every value check in one host read
    longest = int(lengths_B.max())  # and the request's longest row in one more
    capacity = layers[0][0].shape[2]
    needed = longest + input_ids.shape[1] + max_new_tokens - 1
    if max_new_tokens > 0 and needed > capacity:
        raise ValueError(
            f"the request needs {needed} cache slots (longest row {longest} + {input_ids.shape[1]} "
            f"prompt + {max_new_tokens - 1} fed tokens), more than the storage capacity {capacity}"
        )
    if max_new_tokens == 0:
        return input_ids.clone()

    was_training = model.training
    model.train(False)
    try:
        # inference_mode, not no_grad: less bookkeeping per op, and decode is op-bound.
        with torch.inference_mode():
            tokens, written = _decode_loop(
                model, layers, input_ids, positions, starts_B, longest, max_new_tokens, eos_token_id
            )
            _commit_written(storage, layers, lengths_B, starts_B, written)
    finally:
        model.train(was_training)
    return tokens.clone()  # a normal tensor: inference tensors refuse later in-place edits


def _servable_geometry(model: object) -> ModelGeometry:
    """The model's geometry, after checking it has the unchecked body serving runs."""
    geometry = model_geometry(model, "model")
    if not callable(getattr(model, "run_blocks", None)) or not callable(
        getattr(model, "lm_head", None)
    ):
        raise ArgumentTypeError(
            f"model must be a servable cache-aware model (run_blocks, lm_head), "
            f"got {type(model).__name__}"
        )
    return geometry


def _check_storage(
    storage: RequestStorage, input_ids: Tensor, positions: Tensor, geometry: ModelGeometry
) -> tuple[PastKeyValues, Tensor, Tensor, list[ValueCheck]]:
    """The storage's layers, lengths and starts, checked against the model and the prompt.

    Returns the value checks (lengths, starts, continuation) for the caller's one read.
    """
    # Each member is read exactly once (a storage may count or compute its reads).
    members = {name: getattr(storage, name, _MISSING) for name in _STORAGE_MEMBERS}
    missing = [name for name, value in members.items() if value is _MISSING]
    if missing:
        raise ArgumentTypeError(
            f"storage must be request storage ({', '.join(_STORAGE_MEMBERS)}), "
            f"got {type(storage).__name__} without {missing}"
        )
    B = input_ids.shape[0]
    layers = check_past(members["storage"], B, geometry, name="storage")
    _check_not_aliased(layers)
    lengths_B = check_metadata_tensor("cache_lengths", members["cache_lengths"], B, geometry.device)
    starts_B = check_metadata_tensor(
        "cache_start_positions", members["cache_start_positions"], B, geometry.device
    )
    checks = cache_value_checks(
        positions, lengths_B, starts_B, layers[0][0].shape[2], "storage capacity"
    )
    return layers, lengths_B, starts_B, checks


_STORAGE_MEMBERS = ("storage", "cache_lengths", "cache_start_positions", "append")
_MISSING = object()


def _check_not_aliased(layers: PastKeyValues) -> None:
    """Serving writes every storage tensor in place: no two may share memory.

    (The same tensor as a layer's key and value would let the value write overwrite
    the key.) Conservative: views of one buffer whose byte ranges intersect count. Of
    ranges sorted by start, any overlap shows between neighbours.
    """
    spans: list[tuple[int, int, str]] = []
    for index, (key, value) in enumerate(layers):
        for kind, tensor in (("key", key), ("value", value)):
            last = sum(
                (n - 1) * step for n, step in zip(tensor.shape, tensor.stride(), strict=True)
            )
            size = (last + 1) * tensor.element_size() if tensor.numel() else 0
            spans.append((tensor.data_ptr(), tensor.data_ptr() + size, f"storage[{index}] {kind}"))
    spans.sort()
    for (_, end, where), (next_start, _, next_where) in itertools.pairwise(spans):
        if next_start < end:
            raise ValueError(
                f"{next_where} shares memory with {where}: storage tensors must not alias"
            )


def _decode_loop(
    model: ServableModel,
    layers: PastKeyValues,
    input_ids: Tensor,
    positions: Tensor,
    starts_B: Tensor,
    longest: int,
    max_new_tokens: int,
    eos_token_id: int | None,
) -> tuple[Tensor, int]:
    """Prefill then decode; returns (prompt + new tokens, tokens written per row)."""
    B, T = input_ids.shape
    device = input_ids.device
    # Allocated once per request: the slot ruler the mask compares against, the output.
    slot_S = torch.arange(layers[0][0].shape[2], device=device)
    out_tokens = input_ids.new_empty(B, T + max_new_tokens)
    out_tokens[:, :T] = input_ids
    finished_B = torch.zeros(B, dtype=torch.bool, device=device)

    step_ids, step_positions = input_ids, positions
    attend_length = longest + T  # the longest row after this step's write
    emitted = 0
    while True:
        slots_BT = step_positions - starts_B[:, None]
        # Slot s is visible to a query in slot q iff s <= q: the absolute-position mask
        # in slot coordinates (every slot below a row's next one is valid: rows are dense).
        mask = (slot_S[:attend_length] <= slots_BT[:, :, None])[:, None]  # [B, 1, T, L]
        writer = InPlaceCacheWriter(layers, slots_BT, attend_length)
        hidden, _ = model.run_blocks(
            step_ids, step_positions, mask, writer, folded_grouped_query_attention
        )
        logits_BV: Tensor = model.lm_head(hidden[:, -1])
        next_B1 = logits_BV.argmax(dim=-1, keepdim=True)
        if eos_token_id is not None:
            next_B1 = next_B1.masked_fill(finished_B[:, None], eos_token_id)
            finished_B = finished_B | (next_B1[:, 0] == eos_token_id)
        out_tokens[:, T + emitted] = next_B1[:, 0]
        emitted += 1
        if emitted == max_new_tokens or (eos_token_id is not None and bool(finished_B.all())):
            break
        step_ids, step_positions = next_B1, step_positions[:, -1:] + 1
        attend_length += 1
    return out_tokens[:, : T + emitted], T + emitted - 1


def _commit_written(
    storage: RequestStorage,
    layers: PastKeyValues,
    lengths_B: Tensor,
    starts_B: Tensor,
    written: int,
) -> None:
    """Advance the storage's lengths over the ``written`` slots of every row, once.

    The storage contract grows lengths only through ``append``, which also writes:
    it is handed the very K/V already in those slots (gathered), an idempotent write.
    """
    if written == 0:
        return
    slots_BN = lengths_B[:, None] + torch.arange(written, device=lengths_B.device)
    delta: list[LayerKV] = []
    for key_cache, value_cache in layers:
        B, H, _, D = key_cache.shape
        index_BHND = slots_BN[:, None, :, None].expand(B, H, written, D)
        delta.append((key_cache.gather(2, index_BHND), value_cache.gather(2, index_BHND)))
    storage.append(tuple(delta), starts_B[:, None] + slots_BN)


__all__ = ["InPlaceCacheWriter", "RequestStorage", "ServableModel", "serve_generate"]
