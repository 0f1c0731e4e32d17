"""P21 paged_lookup(cache, block_table, positions): gather tokens through a block table."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate, test_device
from gptlab_testkit.boundary import names_argument
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P21_MODULE")

pytestmark = [pytest.mark.owner("p21"), pytest.mark.contract]


def long(rows: list[list[int]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long, device=test_device())


def loop_gather(cache: torch.Tensor, table: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """One token at a time: block = table[b][p // size], offset = p % size."""
    size = cache.shape[1]
    B, T = positions.shape
    out = torch.empty(B, T, *cache.shape[2:], dtype=cache.dtype, device=cache.device)
    for b, row in enumerate(positions.tolist()):
        for t, p in enumerate(row):
            out[b, t] = cache[table[b, p // size], p % size]
    return out


def lookup(cache, table, positions):
    got = drill.paged_lookup(cache, table, positions)
    assert got.shape == (*positions.shape, *cache.shape[2:]), f"output shape {tuple(got.shape)}"
    return got


@pytest.mark.clause("P21.4")
def test_positions_crossing_a_block_edge_read_the_next_physical_block():
    cache = seeded(4, 2, 1, 3, seed=1)  # block size 2
    table = long([[2, 0, 3]])
    positions = long([[1, 2, 3, 4]])  # last of block 2, both of block 0, first of block 3

    # the oracle first: the call's writes cannot reach it
    cache_given = cache.clone()
    got = lookup(cache, table, positions)

    want = torch.stack(
        [cache_given[2, 1], cache_given[0, 0], cache_given[0, 1], cache_given[3, 0]]
    )[None]
    assert torch.equal(got, want), "tokens across a block edge came from the wrong slots"


@pytest.mark.clause("P21.4")
def test_shuffled_physical_blocks_match_the_loop_gather():
    cache = seeded(6, 3, 2, 4, seed=2)
    table = long([[5, 1, 3], [0, 4, 2]])
    positions = long([[0, 4, 8, 3], [7, 2, 6, 1]])

    # the oracle first: the call's writes cannot reach it
    want = loop_gather(cache, table, positions)
    got = lookup(cache, table, positions)

    assert torch.equal(got, want), "gather vs loop oracle"


@pytest.mark.clause("P21.4")
def test_rows_sharing_a_physical_block_read_the_same_tokens():
    cache = seeded(5, 2, 2, 3, seed=3)
    table = long([[4, 1], [4, 2]])  # both rows' first block is physical block 4
    positions = long([[0, 1, 2], [0, 1, 3]])

    # the oracle first: the call's writes cannot reach it
    want = loop_gather(cache, table, positions)
    got = lookup(cache, table, positions)

    assert torch.equal(got[0, :2], got[1, :2]), "a shared block read differently per row"
    assert torch.equal(got, want), "gather vs loop oracle"


@pytest.mark.clause("P21.4")
def test_one_block_used_twice_in_a_row_reads_it_twice():
    cache = seeded(3, 2, 1, 2, seed=4)
    table = long([[1, 1]])

    # the oracle first: the call's writes cannot reach it
    want = loop_gather(cache, table, long([[0, 2, 3, 1]]))
    got = lookup(cache, table, long([[0, 2, 3, 1]]))

    assert torch.equal(got, want)


@pytest.mark.clause("P21.2", "P21.4")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_table_and_positions_match_the_loop_gather(data):
    blocks = data.draw(st.integers(1, 6), label="num_blocks")
    size = data.draw(st.integers(1, 4), label="block_size")
    B = data.draw(st.integers(1, 3), label="B")
    width = data.draw(st.integers(1, 4), label="max_blocks")
    T = data.draw(st.integers(0, 5), label="T")
    H, D = data.draw(st.integers(1, 2), label="Hkv"), data.draw(st.integers(1, 3), label="D")
    table = [[data.draw(st.integers(0, blocks - 1)) for _ in range(width)] for _ in range(B)]
    positions = [[data.draw(st.integers(0, width * size - 1)) for _ in range(T)] for _ in range(B)]
    cache = seeded(blocks, size, H, D, seed=data.draw(st.integers(0, 2**16), label="seed"))
    table_t = long(table)
    positions_t = torch.tensor(positions, dtype=torch.long, device=test_device()).reshape(B, T)

    # the oracle first: the call's writes cannot reach it
    want = loop_gather(cache, table_t, positions_t)
    got = lookup(cache, table_t, positions_t)

    assert torch.equal(got, want), "gather vs loop oracle"


@pytest.mark.clause("P21.5")
@pytest.mark.parametrize("entry", [-1, 3], ids=["unallocated -1", "past the pool"])
def test_invalid_entries_no_position_reads_are_ignored(entry):
    cache = seeded(3, 2, 1, 2, seed=5)
    table = long([[2, entry, entry], [0, 1, entry]])  # not allocated yet: never read here
    positions = long([[0, 1], [3, 2]])

    try:
        got = lookup(cache, table, positions)
    except (TypeError, ValueError) as error:
        raise AssertionError(f"an entry no position reads was rejected: {error}") from error

    assert torch.equal(got, loop_gather(cache, table, positions))


@pytest.mark.clause("P21.10", "P21.11")
def test_inputs_are_only_read_and_the_result_is_the_callers_own():
    cache = seeded(4, 2, 2, 3, seed=6)
    table, positions = long([[3, 1], [0, 2]]), long([[0, 3], [2, 1]])
    with inputs_untouched(cache=cache, block_table=table, positions=positions):
        got = drill.paged_lookup(cache, table, positions)
    before = cache.clone()

    got = got.clone() if got.is_inference() else got
    got.fill_(7.0)  # writing the result must not reach the cache (a gather is a copy)

    assert torch.equal(cache, before), "the result shares memory with the cache"


@pytest.mark.clause("P21.3")
def test_half_precision_cache_returns_its_own_dtype_exactly():
    cache = seeded(3, 2, 2, 2, seed=7, dtype=torch.bfloat16)
    table, positions = long([[2, 0]]), long([[3, 0, 2]])

    # the oracle first: the call's writes cannot reach it
    want = loop_gather(cache, table, positions)
    got = lookup(cache, table, positions)

    assert got.dtype == torch.bfloat16 and torch.equal(got, want)


# ---- invalid table entries and empty or int32 tables: valid_call varied on row 1 ----


def valid_call() -> dict[str, torch.Tensor]:
    return {
        "cache": seeded(4, 2, 1, 3, seed=8),
        "block_table": long([[0, 1], [3, 2]]),
        "positions": long([[0, 3], [1, 2]]),
    }


def masked_gather(
    cache: torch.Tensor, table: torch.Tensor, positions: torch.Tensor
) -> torch.Tensor:
    """The loop gather, with zeros for each position read through an invalid entry."""
    valid = (table >= 0) & (table < cache.shape[0])
    out = loop_gather(cache, table.clamp(0, cache.shape[0] - 1), positions)
    for b, row in enumerate(positions.tolist()):
        for t, p in enumerate(row):
            if not valid[b, p // cache.shape[1]]:
                out[b, t] = 0
    return out


# The kit allows either answer to an invalid entry that is read: a rejection, or a mask.
@pytest.mark.rejection  # a refusal passes it: it earns beside the work only
@pytest.mark.clause("P21.6")
@pytest.mark.parametrize(
    "entry", [-1, -2, 4, 7], ids=["unallocated -1", "below 0", "past the pool", "far past"]
)
def test_a_position_read_through_an_invalid_table_entry_is_rejected_or_masked(entry):
    call = {**valid_call(), "block_table": long([[0, 1], [3, entry]])}  # row 1's position 2
    before = {name: tensor.clone() for name, tensor in call.items()}
    try:
        got = drill.paged_lookup(*call.values())
    except ValueError as error:
        message = str(error)
        assert names_argument(message, "block_table") or names_argument(message, "positions"), (
            f"ValueError does not name block_table or positions: {message!r}"
        )
        got = None
    except Exception as foreign:  # neither a rejection nor a masked gather: a foreign error
        raise AssertionError(
            f"expected ValueError or a masked gather, got {foreign!r}"
        ) from foreign
    for name, tensor in call.items():
        assert torch.equal(tensor, before[name]), f"{name} was written by the call"
    if got is not None:
        want = masked_gather(*call.values())
        assert got.shape == want.shape, f"masked output shape {tuple(got.shape)}"
        assert got.dtype == want.dtype and torch.equal(got, want), (
            "a masked gather must give zeros where an invalid entry is read, the gather elsewhere"
        )


@pytest.mark.clause("P21.1", "P21.2")
def test_no_positions_give_an_empty_result_from_a_positional_call():
    call = valid_call()
    try:
        got = drill.paged_lookup(call["cache"], call["block_table"], long([[], []]).reshape(2, 0))
    except (TypeError, ValueError) as error:  # a signature mismatch or a valid call refused
        raise AssertionError(
            f"paged_lookup(cache, block_table, positions [2, 0]): {error}"
        ) from error
    assert tuple(got.shape) == (2, 0, 1, 3), f"T = 0 gave {tuple(got.shape)}"


@pytest.mark.clause("P21.2", "P21.3")
def test_int32_tables_give_the_same_float32_gather():
    call = valid_call()

    # the oracle first: the call's writes cannot reach it
    want = loop_gather(call["cache"], call["block_table"], call["positions"])
    got = lookup(call["cache"], call["block_table"].int(), call["positions"].int())

    assert got.dtype == torch.float32, f"a float32 cache gave {got.dtype}"
    assert torch.equal(got, want)
