"""PT05 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, shares_storage
from gptlab_testkit.oracles import inputs_untouched, seeded

drill = candidate("DRILL_PT05_MODULE")

pytestmark = [pytest.mark.owner("pt05"), pytest.mark.extension]


@pytest.mark.clause("PT05.9")
@pytest.mark.parametrize("layout", ["contiguous", "columns of a wider buffer", "transposed"])
def test_q_k_and_v_are_views_of_packed(layout):
    views = {
        "contiguous": seeded(3, 16, seed=1),
        "columns of a wider buffer": seeded(3, 21, seed=1)[:, 3:19],
        "transposed": seeded(16, 3, seed=1).t(),
    }
    packed = views[layout]
    q, k, v = drill.unpack_qkv(packed, 4, 2, 2)
    # in judge mode the storages are the worker's, as it reported them
    for name, part in (("Q", q), ("K", k), ("V", v)):
        assert shares_storage(part, packed), f"{name} is a copy, not a view of packed"


@pytest.mark.clause("PT05.10")
@pytest.mark.parametrize(
    ("argument", "bad", "errors"),
    [
        ("packed", lambda: seeded(2, 3, 16, seed=2), BAD_VALUE),
        ("packed", lambda: [[0.0] * 16], WRONG_KIND),
        ("query_heads", lambda: 0, BAD_VALUE),
        ("kv_heads", lambda: -2, BAD_VALUE),
        ("head_dim", lambda: 2.0, WRONG_KIND),
        ("kv_heads", lambda: True, WRONG_KIND),
    ],
    ids=["3-D packed", "a list", "no query heads", "negative kv_heads", "float head_dim",
         "bool kv_heads"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(argument, bad, errors):
    call = {"packed": seeded(2, 16, seed=2), "query_heads": 4, "kv_heads": 2, "head_dim": 2}
    call[argument] = bad()
    kept = {n: t for n, t in call.items() if isinstance(t, torch.Tensor)}
    with inputs_untouched(**kept):
        assert_rejects(lambda: drill.unpack_qkv(**call), errors, argument)


@pytest.mark.clause("PT05.11")
def test_packed_is_only_read():
    packed = seeded(3, 12, seed=3)
    with inputs_untouched(packed=packed):
        drill.unpack_qkv(packed, 2, 2, 2)
