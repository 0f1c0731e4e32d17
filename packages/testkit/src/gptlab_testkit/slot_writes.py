"""Checks of an in-place K/V slot write, shared by every suite that grades one.

`append(k_cache, v_cache, k_new, v_new, slots)` writes `k_new[b, :, t]` into
`k_cache[b, :, slots[b, t]]` (likewise values) in place, for caches `[B, H, S, D]`,
new K/V `[B, H, T, D]` and distinct row-local slots `[B, T]` (long). kv_cache's
`append_kv_cache` and drill P20's (whose kit calls the last argument `positions`)
promise exactly this; each suite passes its own candidate's callable, so the checks
are written once and read the same in both.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from hypothesis import strategies as st
from torch import Tensor

from gptlab_testkit.kv_storage import data_pointers
from gptlab_testkit.oracles import seeded
from gptlab_testkit.tensors import test_device

SlotWrite = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], object]


def loop_slot_write(cache: Tensor, new: Tensor, slots: Tensor) -> Tensor:
    """Loop oracle on a copy: cache[b, :, slots[b, t]] = new[b, :, t]."""
    expected = cache.clone()
    for b, row in enumerate(slots.tolist()):
        for t, slot in enumerate(row):
            expected[b, :, slot] = new[b, :, t]
    return expected


def writes_exactly_the_chosen_slots(append: SlotWrite) -> None:
    """Two rows, two tokens each, out of order: only those slots change."""
    k_cache, v_cache = seeded(2, 3, 6, 4, seed=0), seeded(2, 3, 6, 4, seed=1)
    k_new, v_new = seeded(2, 3, 2, 4, seed=2), seeded(2, 3, 2, 4, seed=3)
    slots = torch.tensor([[4, 1], [0, 5]], device=test_device())
    want_k = loop_slot_write(k_cache, k_new, slots)
    want_v = loop_slot_write(v_cache, v_new, slots)

    append(k_cache, v_cache, k_new, v_new, slots)

    assert torch.equal(k_cache, want_k), "keys: wrong slots written or others changed"
    assert torch.equal(v_cache, want_v), "values: wrong slots written or others changed"


def writes_in_place_without_reallocating(append: SlotWrite) -> None:
    """The caller's tensors are written: same data pointers, and an older view sees it."""
    k_cache = torch.zeros(1, 2, 5, 3, device=test_device())
    v_cache = torch.zeros(1, 2, 5, 3, device=test_device())
    pointers = data_pointers([(k_cache, v_cache)])
    k_view, v_view = k_cache[:, :, 2:3], v_cache[:, :, 2:3]
    k_new, v_new = seeded(1, 2, 1, 3, seed=4), seeded(1, 2, 1, 3, seed=5)

    append(k_cache, v_cache, k_new, v_new, torch.tensor([[2]], device=test_device()))

    assert data_pointers([(k_cache, v_cache)]) == pointers, "cache was reallocated"
    assert torch.equal(k_view, k_new), "key not written into the caller's tensor"
    assert torch.equal(v_view, v_new), "value not written into the caller's tensor"


def matches_loop_oracle_for_distinct_slots(append: SlotWrite, data: st.DataObject) -> None:
    """Any small shape, T from 0 to S, each row's slots a distinct random draw."""
    B = data.draw(st.integers(1, 3), label="B")
    H = data.draw(st.integers(1, 3), label="H")
    S = data.draw(st.integers(1, 7), label="S")
    D = data.draw(st.integers(1, 4), label="D")
    T = data.draw(st.integers(0, S), label="T")
    rows = [data.draw(st.permutations(range(S)), label=f"row {b}")[:T] for b in range(B)]
    slots = torch.tensor(rows, dtype=torch.long, device=test_device()).reshape(B, T)
    seed = data.draw(st.integers(0, 2**16), label="seed")
    k_cache, v_cache = seeded(B, H, S, D, seed=seed), seeded(B, H, S, D, seed=seed + 1)
    k_new, v_new = seeded(B, H, T, D, seed=seed + 2), seeded(B, H, T, D, seed=seed + 3)
    want_k = loop_slot_write(k_cache, k_new, slots)
    want_v = loop_slot_write(v_cache, v_new, slots)

    append(k_cache, v_cache, k_new, v_new, slots)

    assert torch.equal(k_cache, want_k), "keys differ from the loop oracle"
    assert torch.equal(v_cache, want_v), "values differ from the loop oracle"


__all__ = [
    "SlotWrite",
    "loop_slot_write",
    "matches_loop_oracle_for_distinct_slots",
    "writes_exactly_the_chosen_slots",
    "writes_in_place_without_reallocating",
]
