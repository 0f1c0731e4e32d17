"""P04 extension: what this project's repeat_kv_for_gqa does outside the graded contract."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import WRONG_KIND, assert_rejects, candidate, shares_storage
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_P04_MODULE")

pytestmark = [pytest.mark.owner("p04"), pytest.mark.extension]


@pytest.mark.clause("P04.10")
def test_ratio_one_returns_kv_itself_and_a_larger_ratio_one_new_copy():
    kv = seeded(2, 2, 3, 4, seed=1)

    assert drill.repeat_kv_for_gqa(kv, 2) is kv
    got = drill.repeat_kv_for_gqa(kv, 4)
    assert got.is_contiguous() and not shares_storage(got, kv), "the copy shares kv's memory"


@pytest.mark.clause("P04.10")
def test_a_kv_without_heads_is_rejected_naming_kv():
    assert_rejects(lambda: drill.repeat_kv_for_gqa(torch.zeros(1, 0, 3, 4), 4), ValueError, "kv")


@pytest.mark.clause("P04.10")
@pytest.mark.parametrize("query_heads", [2**62, 2**70])
def test_a_head_count_past_int64_is_rejected_naming_query_heads(query_heads):
    kv = torch.zeros(1, 2, 3, 4)

    assert_rejects(lambda: drill.repeat_kv_for_gqa(kv, query_heads), ValueError, "query_heads")


@pytest.mark.clause("P04.10")
def test_meta_tensors_are_expanded_by_shape():
    kv = torch.empty(2, 2, 3, 4, device="meta")

    assert drill.repeat_kv_for_gqa(kv, 8).shape == (2, 8, 3, 4)


@pytest.mark.clause("P04.7")
def test_zero_query_heads_are_rejected():
    kv = seeded(2, 2, 3, 4, seed=16)
    with inputs_untouched(kv=kv):
        assert_rejects(lambda: drill.repeat_kv_for_gqa(kv, 0), ValueError, ("query_heads", "kv"))


@pytest.mark.clause("P04.8")
def test_kv_that_is_not_four_dimensional_is_rejected():
    kv = seeded(2, 3, 4, seed=17)
    with inputs_untouched(kv=kv):
        assert_rejects(lambda: drill.repeat_kv_for_gqa(kv, 4), ValueError, "kv")


@pytest.mark.clause("P04.7")
@pytest.mark.parametrize("query_heads", [-4, True, 4.0, None, "4"], ids=repr)
def test_a_query_head_count_that_is_not_a_positive_int_is_rejected(query_heads):
    kv = seeded(2, 2, 3, 4, seed=18)
    with inputs_untouched(kv=kv):
        assert_rejects(lambda: drill.repeat_kv_for_gqa(kv, query_heads), WRONG_KIND, "query_heads")


@pytest.mark.clause("P04.8")
@pytest.mark.parametrize("kv", [None, [[[[1.0]]]], 2.0], ids=repr)
def test_kv_that_is_not_a_tensor_is_rejected(kv):
    assert_rejects(lambda: drill.repeat_kv_for_gqa(kv, 4), WRONG_KIND, "kv")


@pytest.mark.clause("P04.8")
def test_kv_with_five_dimensions_is_rejected():
    kv = seeded(2, 2, 3, 4, 1, seed=19)
    with inputs_untouched(kv=kv):
        assert_rejects(lambda: drill.repeat_kv_for_gqa(kv, 4), ValueError, "kv")
