"""append_kv_cache: the in-place slot write every other path reuses.

The checks live in gptlab_testkit.slot_writes, shared with drill P20's suite (the same
contract); this suite runs them on KV_CACHE_MODULE's append_kv_cache.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gptlab_testkit import candidate
from gptlab_testkit import slot_writes as checks

kvc = candidate("KV_CACHE_MODULE")

pytestmark = [pytest.mark.owner("fixed_capacity_storage"), pytest.mark.contract]


def test_append_kv_cache_writes_exactly_the_chosen_slots_of_each_row():
    checks.writes_exactly_the_chosen_slots(kvc.append_kv_cache)


def test_append_kv_cache_writes_in_place_without_reallocating():
    checks.writes_in_place_without_reallocating(kvc.append_kv_cache)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_append_kv_cache_matches_a_loop_oracle_for_any_distinct_slots(data):
    checks.matches_loop_oracle_for_distinct_slots(kvc.append_kv_cache, data)
