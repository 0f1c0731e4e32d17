"""The serving decode path: K/V written in place into request storage, same tokens as generate.

Extension tests of this project's ``serve_generate``, taken (with the test models)
from the module ``CACHE_AWARE_LM_MODULE`` selects; with the reference they run on
both variants. Request storage is the ``KVCache`` that ``KV_CACHE_MODULE`` selects:
the serving path relies on its contract alone. Oracles: the model's own reference
``generate`` (functional cache), each row generated alone from its whole prompt,
and one full uncached forward. A candidate without ``serve_generate`` skips them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from gptlab_testkit import assert_close, assert_past_close, candidate, test_device
from gptlab_testkit.kv_storage import data_pointers, pad_rows
from gptlab_testkit.models import cache_aware_modules
from gptlab_testkit.objects import assert_same_objects, reported

cam = candidate("CACHE_AWARE_LM_MODULE")
kvc = candidate("KV_CACHE_MODULE")
VARIANTS: dict[str, ModuleType] = cache_aware_modules()

pytestmark = [
    pytest.mark.extension,
    pytest.mark.owner("serving_decode"),
    pytest.mark.skipif(
        not hasattr(cam, "serve_generate"), reason="the candidate has no serve_generate"
    ),
]


@pytest.fixture(scope="module", params=list(VARIANTS), ids=list(VARIANTS))
def variant(request):
    return VARIANTS[request.param]


@pytest.fixture(scope="module")
def model(variant):
    """The variant's test model with attention outputs scaled 8x.

    The factory models mostly follow the last token, so an error in what attention
    reads (wrong slot, leaked padding) could leave greedy tokens unchanged; louder
    attention makes every such error show in the tokens.
    """
    model = variant.make_test_model().to(test_device())
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "attention.out_proj" in name:
                parameter.mul_(8.0)
    return model


def long(rows: Sequence[Sequence[int]] | Sequence[int]) -> Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def random_tokens(batch: int, length: int, seed: int) -> Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 16, (batch, length), generator=generator).to(test_device())


def position_rows(starts: Sequence[int], length: int) -> Tensor:
    return long([[start + t for t in range(length)] for start in starts])


def empty_storage(model, batch: int, capacity: int, starts: Sequence[int]):
    geometry = model.geometry
    return kvc.KVCache(
        geometry.n_layers,
        batch,
        geometry.n_kv_heads,
        capacity,
        geometry.head_dim,
        device=test_device(),
        start_positions=long(starts),
    )


@dataclass(frozen=True)
class Request:
    """Rows with cached prefixes of their own lengths and origins, plus a shared-T suffix."""

    prefixes: list[list[int]]
    origins: list[int]
    suffix: Tensor  # [B, T]

    @property
    def suffix_positions(self) -> Tensor:
        T = self.suffix.shape[1]
        rows = zip(self.prefixes, self.origins, strict=True)
        return long([[origin + len(prefix) + t for t in range(T)] for prefix, origin in rows])

    def whole_prompt(self, row: int) -> tuple[Tensor, Tensor]:
        """Row ``row`` alone: its prefix and suffix as one prompt at its origin."""
        ids = self.prefixes[row] + self.suffix[row].tolist()
        return long([ids]), position_rows([self.origins[row]], len(ids))


def storage_for(model, request: Request, capacity: int):
    """A KVCache holding each row's prefix (computed alone), left-aligned, per-row lengths."""
    rows = []
    for tokens, origin in zip(request.prefixes, request.origins, strict=True):
        ids = long([tokens or [0]])  # an empty prefix: one token of padding, length 0
        with torch.no_grad():
            out = model(ids, position_rows([origin], ids.shape[1]), use_cache=True)
        rows.append(out.past_key_values)
    lengths = long([len(tokens) for tokens in request.prefixes])
    return kvc.KVCache.from_past_key_values(
        pad_rows(rows, fill=0.0), lengths, long(request.origins), capacity=capacity
    )


def serve(model, ids, positions, new_tokens, storage, eos_token_id=None) -> Tensor:
    return cam.serve_generate(model, ids, positions, new_tokens, storage, eos_token_id=eos_token_id)


# ---- token-for-token parity with the reference generate ----------------------------


def test_serving_emits_the_reference_generate_tokens(model):
    ids = random_tokens(3, 5, seed=1)
    origins = [0, 4, 9]
    positions = position_rows(origins, 5)
    expected = model.generate(ids, positions, 12)
    storage = empty_storage(model, 3, capacity=20, starts=origins)
    assert torch.equal(serve(model, ids, positions, 12, storage), expected)


@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_rows_with_different_cached_lengths_match_each_row_alone(model, data):
    batch = data.draw(st.integers(1, 3), label="batch")
    prefixes = [
        data.draw(st.lists(st.integers(0, 15), max_size=6), label=f"prefix {b}")
        for b in range(batch)
    ]
    origins = [data.draw(st.integers(0, 8), label=f"origin {b}") for b in range(batch)]
    T = data.draw(st.integers(1, 3), label="suffix length")
    new_tokens = data.draw(st.integers(1, 6), label="new tokens")
    request = Request(prefixes, origins, random_tokens(batch, T, seed=batch * 7 + T))
    storage = storage_for(model, request, capacity=6 + T + new_tokens)

    out = serve(model, request.suffix, request.suffix_positions, new_tokens, storage)

    for row in range(batch):
        ids, positions = request.whole_prompt(row)
        alone = model.generate(ids, positions, new_tokens)[0, ids.shape[1] :]
        assert torch.equal(out[row, T:], alone), f"row {row} differs from the row decoded alone"


def test_stale_storage_slots_never_reach_attention(model):
    request = Request([[3, 1, 4, 1, 5], [], [9, 2]], [2, 0, 7], random_tokens(3, 2, seed=2))
    clean = storage_for(model, request, capacity=16)
    stale = storage_for(model, request, capacity=16)
    lengths = stale.cache_lengths.tolist()
    for key, value in stale.storage:  # what a previous request could have left behind
        for row, length in enumerate(lengths):
            key[row, :, length:] = 1e4
            value[row, :, length:] = -1e4
    positions = request.suffix_positions
    expected = serve(model, request.suffix, positions, 8, clean)
    assert torch.equal(serve(model, request.suffix, positions, 8, stale), expected)


# ---- EOS -----------------------------------------------------------------------------


def test_eos_model_rows_stop_as_in_generate(variant):
    model = variant.make_eos_test_model().to(test_device())
    ids, positions = long([[1], [2]]), long([[0], [0]])
    storage = empty_storage(model, 2, capacity=8, starts=[0, 0])
    out = serve(model, ids, positions, 4, storage, eos_token_id=0)
    assert out.tolist() == [[1, 0, 0], [2, 3, 0]]
    assert torch.equal(out, model.generate(ids, positions, 4, eos_token_id=0))


def test_staggered_eos_matches_generate_on_a_random_model(model):
    ids = random_tokens(3, 4, seed=3)
    origins = [1, 0, 6]
    positions = position_rows(origins, 4)
    free_run = model.generate(ids, positions, 10)
    eos = int(free_run[1, 6])  # a token row 1 emits mid-way: rows finish at different steps
    expected = model.generate(ids, positions, 10, eos_token_id=eos)
    storage = empty_storage(model, 3, capacity=16, starts=origins)
    assert torch.equal(serve(model, ids, positions, 10, storage, eos_token_id=eos), expected)


# ---- what the storage holds afterwards -------------------------------------------


def test_storage_holds_everything_fed_and_counts_it(model):
    request = Request([[5, 6, 7], [8]], [0, 3], random_tokens(2, 2, seed=4))
    storage = storage_for(model, request, capacity=16)
    out = serve(model, request.suffix, request.suffix_positions, 5, storage)

    fed = [request.prefixes[row] + out[row, :-1].tolist() for row in range(2)]
    assert storage.cache_lengths.tolist() == [len(tokens) for tokens in fed]
    assert storage.cache_start_positions.tolist() == request.origins
    snapshot = storage.snapshot()
    for row, tokens in enumerate(fed):
        with torch.no_grad():
            full = model(
                long([tokens]), position_rows([request.origins[row]], len(tokens)), use_cache=True
            )
        row_snapshot = tuple(
            (key[row : row + 1, :, : len(tokens)], value[row : row + 1, :, : len(tokens)])
            for key, value in snapshot
        )
        assert_past_close(row_snapshot, full.past_key_values, f"row {row} stored K/V")


def test_decode_writes_in_place_without_reallocating(model):
    storage = empty_storage(model, 2, capacity=24, starts=[0, 5])
    tensors_before = storage.storage
    pointers_before = data_pointers(tensors_before)
    ids = random_tokens(2, 3, seed=5)
    serve(model, ids, position_rows([0, 5], 3), 9, storage)
    tensors_after = storage.storage
    assert_same_objects(tensors_after, tensors_before, "storage rebound")
    reallocated = "storage reallocated" + reported(tensors_after)
    assert data_pointers(tensors_after) == pointers_before, reallocated


class CountingStorage:
    """Forwards to a KVCache and counts how often the serving path reaches it."""

    def __init__(self, cache) -> None:
        self.cache = cache
        self.reads = 0
        self.appends = 0

    @property
    def storage(self):
        self.reads += 1
        return self.cache.storage

    @property
    def cache_lengths(self):
        self.reads += 1
        return self.cache.cache_lengths

    @property
    def cache_start_positions(self):
        self.reads += 1
        return self.cache.cache_start_positions

    def append(self, past_key_values, positions) -> None:
        self.appends += 1
        self.cache.append(past_key_values, positions)


@pytest.mark.parametrize("new_tokens", [2, 12])
def test_storage_is_read_and_committed_once_per_request(model, new_tokens):
    counting = CountingStorage(empty_storage(model, 2, capacity=20, starts=[0, 3]))
    ids = random_tokens(2, 3, seed=6)
    serve(model, ids, position_rows([0, 3], 3), new_tokens, counting)
    assert counting.reads == 3, "storage metadata must be read once per request, not per token"
    assert counting.appends == 1


# ---- validation, once, before anything is written ----------------------------------


def _rejected(model, storage, ids, positions, max_new_tokens, **kwargs) -> None:
    lengths_before = storage.cache_lengths.clone()
    snapshot_before = [(k.clone(), v.clone()) for k, v in storage.storage]
    with pytest.raises(ValueError):
        serve(model, ids, positions, max_new_tokens, storage, **kwargs)
    assert torch.equal(storage.cache_lengths, lengths_before)
    for (key, value), (key0, value0) in zip(storage.storage, snapshot_before, strict=True):
        assert torch.equal(key, key0) and torch.equal(value, value0), "storage was written"


def test_positions_that_skip_the_stored_prefix_are_rejected(model):
    request = Request([[1, 2, 3], [4]], [0, 2], random_tokens(2, 2, seed=7))
    storage = storage_for(model, request, capacity=16)
    _rejected(model, storage, request.suffix, request.suffix_positions + 1, 3)


def test_a_request_beyond_the_storage_capacity_is_rejected(model):
    storage = empty_storage(model, 2, capacity=6, starts=[0, 0])
    ids = random_tokens(2, 3, seed=8)
    _rejected(model, storage, ids, position_rows([0, 0], 3), 5)  # needs 3 + 5 - 1 = 7 slots


def test_storage_of_another_geometry_is_rejected(model):
    geometry = model.geometry
    storage = kvc.KVCache(
        geometry.n_layers,
        2,
        geometry.n_kv_heads * 2,  # wrong head count
        16,
        geometry.head_dim,
        device=test_device(),
    )
    ids = random_tokens(2, 2, seed=9)
    _rejected(model, storage, ids, position_rows([0, 0], 2), 3)


@pytest.mark.parametrize("bad", [{"max_new_tokens": -1}, {"eos_token_id": 99}])
def test_bad_generation_arguments_are_rejected(model, bad):
    storage = empty_storage(model, 1, capacity=8, starts=[0])
    ids = random_tokens(1, 2, seed=10)
    arguments = {"max_new_tokens": 3, **bad}
    max_new_tokens = arguments.pop("max_new_tokens")
    _rejected(model, storage, ids, position_rows([0], 2), max_new_tokens, **arguments)


def test_context_overflow_is_rejected(model):
    context = model.geometry.context_length
    storage = empty_storage(model, 1, capacity=context + 8, starts=[context - 4])
    ids = random_tokens(1, 2, seed=11)
    _rejected(model, storage, ids, position_rows([context - 4], 2), 3)


# ---- edges -----------------------------------------------------------------------------


def test_zero_new_tokens_returns_the_prompt_and_writes_nothing(model):
    storage = empty_storage(model, 1, capacity=8, starts=[0])
    ids = random_tokens(1, 3, seed=12)
    out = serve(model, ids, position_rows([0], 3), 0, storage)
    assert torch.equal(out, ids) and out is not ids
    assert storage.cache_lengths.tolist() == [0]


def test_serving_restores_the_callers_training_mode(model):
    model.train()
    try:
        storage = empty_storage(model, 1, capacity=8, starts=[0])
        serve(model, random_tokens(1, 2, seed=13), position_rows([0], 2), 3, storage)
        assert model.training
    finally:
        model.eval()


# ---- the serving attention kernel ----------------------------------------------------


@pytest.mark.parametrize(("heads", "kv_heads", "queries"), [(4, 4, 3), (4, 2, 1), (6, 2, 3)])
def test_folded_grouped_attention_equals_repeated_kv_attention(heads, kv_heads, queries):
    generator = torch.Generator().manual_seed(heads * 10 + kv_heads)
    B, S, D = 2, 7, 8
    query = torch.randn(B, heads, queries, D, generator=generator)
    keys, values = (torch.randn(B, kv_heads, S, D, generator=generator) for _ in range(2))
    slots = torch.tensor([[4], [6]]) + torch.arange(queries) - (queries - 1)  # [B, T]
    mask = (torch.arange(S) <= slots[:, :, None])[:, None]  # rows of different lengths
    device = test_device()
    query, keys, values, mask = (t.to(device) for t in (query, keys, values, mask))
    assert_close(
        cam.folded_grouped_query_attention(query, keys, values, mask),
        cam.grouped_query_attention(query, keys, values, mask),
        "folded grouped-query attention",
    )
