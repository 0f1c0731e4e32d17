"""PT21 write_slots_(cache [P, S, Hkv, D], values [N, Hkv, D], slot_mapping [N]): in place.

Flat physical slot s is page s // S, offset s % S. The oracle writes one token at a time
into a clone; every comparison is bitwise (a copy of values is exact), and the slots no
token names are compared byte for byte, -0.0 and a NaN payload included.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import BAD_VALUE, assert_rejects, candidate, test_device
from gptlab_testkit.objects import memory_address
from gptlab_testkit.oracles import assert_binds, inputs_untouched, seeded

drill = candidate("DRILL_PT21_MODULE")

pytestmark = [pytest.mark.owner("pt21"), pytest.mark.contract]


def long(values: list[int], dtype: torch.dtype = torch.long) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype, device=test_device()).reshape(len(values))


def loop_write(cache: torch.Tensor, values: torch.Tensor, slots: list[int]) -> torch.Tensor:
    """The oracle, on a clone: one token at a time to (page, offset) = divmod(slot, S)."""
    want = cache.clone()
    for i, slot in enumerate(slots):
        page, offset = divmod(slot, cache.shape[1])
        want[page, offset] = values[i]
    return want


def raw_bytes(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.contiguous().view(torch.uint8)


NAN_PAYLOADS = {torch.float32: (0x7FC0_0123, torch.int32), torch.bfloat16: (0x7FC3, torch.int16)}


def odd_bytes_cache(
    P: int, S: int, H: int, D: int, seed: int, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """A cache whose values include -0.0 and a NaN with a payload: arithmetic would change
    their bytes, a copy never does."""
    cache = seeded(P, S, H, D, seed=seed, dtype=dtype)
    cache[..., 0] = -0.0
    bits, as_int = NAN_PAYLOADS[dtype]
    cache[..., -1] = torch.tensor([bits], dtype=as_int, device=test_device()).view(dtype)
    return cache


def check(cache: torch.Tensor, values: torch.Tensor, slots: list[int], what: str) -> None:
    want = loop_write(cache, values, slots)

    drill.write_slots_(cache, values, long(slots))

    assert cache.dtype == want.dtype, f"{what}: the cache became {cache.dtype}"
    assert torch.equal(raw_bytes(cache), raw_bytes(want)), f"{what}: differs from the loop"


@pytest.mark.clause("PT21.1")
def test_the_arguments_bind_by_name_in_the_kits_order():
    cache, values = seeded(2, 3, 1, 2, seed=1), seeded(1, 1, 2, seed=2)
    assert_binds(drill.write_slots_, cache, values, long([4]))
    assert_binds(drill.write_slots_, slot_mapping=long([4]), values=values, cache=cache)
    want = loop_write(cache, values, [4])

    drill.write_slots_(slot_mapping=long([4]), values=values, cache=cache)

    assert torch.equal(cache, want), "called by name, slot 4 is not page 1, offset 1"


@pytest.mark.clause("PT21.3")
def test_unordered_slots_land_on_their_pages_and_offsets():
    cache, values = seeded(3, 4, 2, 3, seed=3), seeded(5, 2, 3, seed=4)
    check(cache, values, [9, 2, 11, 4, 0], "slots 9, 2, 11, 4, 0 with S = 4")


@pytest.mark.clause("PT21.3")
def test_slots_on_both_sides_of_each_page_boundary():
    cache, values = seeded(3, 4, 2, 3, seed=5), seeded(4, 2, 3, seed=6)
    check(cache, values, [3, 4, 7, 8], "the last offset of a page and the first of the next")


@pytest.mark.clause("PT21.3")
def test_the_last_physical_slot_and_slot_zero():
    cache, values = seeded(2, 5, 1, 2, seed=7), seeded(2, 1, 2, seed=8)
    check(cache, values, [9, 0], "slot P * S - 1 and slot 0")


@pytest.mark.clause("PT21.3")
def test_a_page_of_one_slot_maps_each_slot_to_its_own_page():
    cache, values = seeded(4, 1, 2, 2, seed=9), seeded(3, 2, 2, seed=10)
    check(cache, values, [3, 1, 2], "S = 1")


@pytest.mark.clause("PT21.2")
def test_no_tokens_write_nothing():
    cache = seeded(2, 3, 2, 2, seed=11)
    values, slots = seeded(0, 2, 2, seed=12), long([])
    with inputs_untouched(cache=cache, values=values, slot_mapping=slots):
        try:
            drill.write_slots_(cache, values, slots)
        except (TypeError, ValueError) as error:  # N = 0 is valid: a rejection fails the clause
            raise AssertionError(f"a write of no tokens was rejected: {error}") from error


@pytest.mark.clause("PT21.2", "PT21.3")
@pytest.mark.parametrize(
    ("dtype", "index_dtype"),
    [(torch.float32, torch.int32), (torch.bfloat16, torch.int64), (torch.float16, torch.int32)],
    ids=str,
)
def test_int32_or_int64_slots_and_any_float_cache_are_written_exactly(dtype, index_dtype):
    cache, values = seeded(2, 4, 2, 3, seed=13, dtype=dtype), seeded(3, 2, 3, seed=14, dtype=dtype)
    want = loop_write(cache, values, [6, 1, 4])

    drill.write_slots_(cache, values, long([6, 1, 4], index_dtype))

    assert cache.dtype == dtype, f"the cache became {cache.dtype}"
    assert torch.equal(raw_bytes(cache), raw_bytes(want)), f"{dtype}: differs from the loop"


@pytest.mark.clause("PT21.3")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_distinct_slots_match_the_loop_oracle(data):
    P = data.draw(st.integers(1, 4), label="P")
    S = data.draw(st.integers(1, 5), label="S")
    H = data.draw(st.integers(1, 3), label="Hkv")
    D = data.draw(st.integers(1, 3), label="D")
    N = data.draw(st.integers(0, P * S), label="N")
    slots = data.draw(st.permutations(range(P * S)), label="order")[:N]
    seed = data.draw(st.integers(0, 2**16), label="seed")

    check(seeded(P, S, H, D, seed=seed), seeded(N, H, D, seed=seed + 1), slots, f"{slots}")


@pytest.mark.clause("PT21.4")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_every_slot_no_token_names_keeps_its_bytes(dtype):
    cache = odd_bytes_cache(3, 4, 2, 3, seed=15, dtype=dtype)
    values = seeded(3, 2, 3, seed=16, dtype=dtype)
    written = [(1, 2), (2, 3), (0, 0)]  # slots 6, 11, 0
    before = raw_bytes(cache).clone()

    drill.write_slots_(cache, values, long([6, 11, 0]))

    after = raw_bytes(cache)
    for page in range(3):
        for offset in range(4):
            if (page, offset) not in written:
                assert torch.equal(after[page, offset], before[page, offset]), (
                    f"page {page}, offset {offset} was not named yet its bytes changed"
                )
    for i, (page, offset) in enumerate(written):
        assert torch.equal(cache[page, offset], values[i]), f"token {i} not at {page}, {offset}"


@pytest.mark.clause("PT21.5")
def test_the_callers_cache_is_written_in_place_and_keeps_its_data_pointer():
    cache, values = torch.zeros(2, 3, 2, 2, device=test_device()), seeded(2, 2, 2, seed=17)
    address = memory_address(cache)
    page_one = cache[1]  # a view taken before the call must see the write

    drill.write_slots_(cache, values, long([4, 0]))

    assert memory_address(cache) == address, "the cache was reallocated"
    assert torch.equal(page_one[1], values[0]), "slot 4 is not written into the caller's cache"
    assert torch.equal(cache[0, 0], values[1]), "slot 0 is not written into the caller's cache"


@pytest.mark.clause("PT21.6")
def test_values_and_slot_mapping_are_only_read():
    cache, values, slots = seeded(2, 3, 1, 2, seed=18), seeded(3, 1, 2, seed=19), long([5, 0, 3])
    with inputs_untouched(values=values, slot_mapping=slots):
        drill.write_slots_(cache, values, slots)
    assert torch.equal(cache, loop_write(seeded(2, 3, 1, 2, seed=18), values, [5, 0, 3]))


# ---- rejection: valid in every respect but one, the bad slot last, before any write ----


def valid_call() -> dict[str, torch.Tensor]:
    return {
        "cache": odd_bytes_cache(2, 4, 2, 3, seed=20),
        "values": seeded(4, 2, 3, seed=21),
        "slot_mapping": long([0, 5, 3, 6]),
    }


def rejected(slots: list[int], values: tuple[object, ...]) -> None:
    call = {**valid_call(), "slot_mapping": long(slots)}
    with inputs_untouched(**call):
        assert_rejects(lambda: drill.write_slots_(**call), BAD_VALUE, "slot_mapping", values=values)


@pytest.mark.clause("PT21.7")
@pytest.mark.parametrize(
    "slots", [[0, 5, 3, 3], [6, 5, 3, 6], [7, 7, 3, 1]], ids=["last two", "apart", "first two"]
)
def test_a_slot_named_twice_is_rejected_before_any_write(slots):
    repeat = next(s for s in slots if slots.count(s) > 1)
    rejected(slots, (repeat,))


@pytest.mark.clause("PT21.8")
@pytest.mark.parametrize("bad", [-1, -8, -9], ids=["-1", "-S*P", "below -S*P"])
def test_a_negative_slot_is_rejected_before_any_write(bad):
    rejected([0, 5, 3, bad], (bad,))


@pytest.mark.clause("PT21.9")
@pytest.mark.parametrize("bad", [8, 12, 1000], ids=["P*S", "a page past", "far past"])
def test_a_slot_past_the_last_physical_slot_is_rejected_before_any_write(bad):
    rejected([0, 5, 3, bad], (bad,))
