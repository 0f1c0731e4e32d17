"""PT38 extension: this project's rules beyond the kit's contract (tested apart, never scored)."""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import BAD_VALUE, WRONG_KIND, assert_rejects, candidate, test_device
from gptlab_testkit.oracles import seeded

drill = candidate("DRILL_PT38_MODULE")

pytestmark = [pytest.mark.owner("pt38"), pytest.mark.extension]


def shards() -> list[torch.Tensor]:
    return list(seeded(3, 8, seed=1).split([4, 4], dim=-1))


def targets() -> torch.Tensor:
    return torch.tensor([1, 5, 7], device=test_device())


@pytest.mark.clause("PT38.12")
@pytest.mark.parametrize(
    ("call", "argument", "errors"),
    [
        (lambda: drill.vocab_parallel_logprobs([], targets()), "shards", BAD_VALUE),
        (lambda: drill.vocab_parallel_logprobs([torch.ones(3, 8, dtype=torch.long)], targets()),
         "shard", WRONG_KIND),
        (lambda: drill.vocab_parallel_logprobs(shards(), targets().float()), "targets",
         WRONG_KIND),
        (lambda: drill.vocab_parallel_logprobs(shards(), targets()[:, None]), "targets",
         BAD_VALUE),
        (lambda: drill.vocab_parallel_logprobs(shards(), targets()[:2]), "targets", BAD_VALUE),
        (lambda: drill.vocab_parallel_logprobs(shards(), targets(), torch.ones(3)), "valid",
         WRONG_KIND),
        (lambda: drill.vocab_parallel_logprobs(shards(), targets(),
                                               torch.ones(2, dtype=torch.bool)), "valid",
         BAD_VALUE),
        (lambda: drill.shard_max(torch.zeros(4)), "shard", BAD_VALUE),
    ],
    ids=["no shards", "an integer shard", "float targets", "2-D targets", "targets of another N",
         "float valid", "valid of another N", "a 1-D shard"],
)  # fmt: skip
def test_the_reference_rejects_inputs_the_contract_leaves_undefined(call, argument, errors):
    assert_rejects(call, errors, argument)
