"""PT39 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import inputs_untouched

drill = candidate("DRILL_PT39_MODULE")

pytestmark = [pytest.mark.owner("pt39"), pytest.mark.extension]


def shard(width: int = 4) -> torch.Tensor:
    return torch.arange(3.0 * width, device=test_device()).reshape(3, width)


def candidates() -> tuple[torch.Tensor, torch.Tensor]:
    return shard(4), torch.arange(12, device=test_device()).reshape(3, 4)


@pytest.mark.clause("PT39.12")
@pytest.mark.parametrize(
    ("name", "call", "argument", "errors"),
    [
        ("bool k", lambda: drill.global_topk([shard()], True), "k", WRONG_KIND),
        ("float k", lambda: drill.global_topk([shard()], 2.0), "k", WRONG_KIND),
        ("no shards", lambda: drill.global_topk([], 1), "shards", BAD_VALUE),
        ("a 1-D shard", lambda: drill.global_topk([shard(), torch.zeros(3)], 1), "shards",
         BAD_VALUE),
        ("local k = 0", lambda: drill.local_topk(shard(), 0, 0), "k", BAD_VALUE),
        ("negative offset", lambda: drill.local_topk(shard(), 2, -4), "offset", BAD_VALUE),
        ("merge k past the candidates", lambda: drill.merge_topk(*candidates(), 5), "k",
         BAD_VALUE),
        ("float ids", lambda: drill.merge_topk(shard(), shard(), 2), "ids", WRONG_KIND),
        ("ids of another shape", lambda: drill.merge_topk(shard(), shard(3).long(), 2), "ids",
         BAD_VALUE),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(name, call, argument, errors):
    with inputs_untouched():
        assert_rejects(call, errors, argument)
