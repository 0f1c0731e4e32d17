"""PT38 on two real Gloo ranks: the global max and exp-sum are the only values that move.

Each rank holds its own vocab shard of the same logits (built from a seed on each rank).
It all-reduces (MAX) what shard_max returned, then all-reduces (SUM) the exp-sum and
target logits shard_sums returned against that global max. The bytes moved are counted
from the tensors the candidate returned: three fp32 values a row per rank, never V_r.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate
from gptlab_testkit.rank_pair import torch_beside

drill = candidate("DRILL_PT38_MODULE")
dist = torch_beside(drill, "torch.distributed")

pytestmark = [pytest.mark.owner("pt38"), pytest.mark.contract]

WORLD = 2


def logits(rows: int, vocab: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    full = torch.randn(rows, vocab, generator=generator, dtype=torch.float64) * 4
    full[:, : vocab // 2] += 30.0  # rank 0's shard dwarfs rank 1's
    return full.float()


def oracle(full: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(full.double(), dim=-1).gather(-1, targets[:, None])[:, 0]


def send_size(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


# ---- the job: module-level, run as job(rank, *args) on each rank ----


def sharded_logprobs(rank, rows, widths, targets, seed):
    full = logits(rows, sum(widths), seed)
    offset = sum(widths[:rank])
    shard = full[:, offset : offset + widths[rank]].clone()
    ids = torch.tensor(targets)
    local_max = drill.shard_max(shard)
    sent = {"max": (tuple(local_max.shape), local_max.dtype)}
    if sent["max"] != ((rows,), torch.float32):
        return {"sent": sent}  # both ranks stop here: no collective on a wrong shape
    global_max = local_max.clone()
    dist.all_reduce(global_max, op=dist.ReduceOp.MAX)
    exp_sum, target_logit = drill.shard_sums(shard, ids, offset, global_max)
    sent["sums"] = [(tuple(t.shape), t.dtype) for t in (exp_sum, target_logit)]
    sent["bytes"] = send_size(local_max) + send_size(exp_sum) + send_size(target_logit)
    if sent["sums"] != [((rows,), torch.float32)] * 2:
        return {"sent": sent}
    sums = torch.stack([exp_sum, target_logit]).contiguous()  # one SUM of 2 x [N]
    dist.all_reduce(sums)
    return {"sent": sent, "logprobs": sums[1] - global_max - sums[0].log()}


@pytest.mark.clause("PT38.8")
@pytest.mark.parametrize(
    ("rows", "widths", "targets"),
    [(4, (6, 6), [0, 5, 6, 11]), (3, (7, 5), [11, 2, 7])],
    ids=["even shards", "uneven shards"],
)
def test_only_a_max_and_two_sums_per_row_leave_each_rank(two_ranks, rows, widths, targets):
    seed = rows * 7
    results = two_ranks.run("sharded_logprobs", [(rows, widths, targets, seed)] * WORLD)
    want = oracle(logits(rows, sum(widths), seed), torch.tensor(targets))
    for rank, result in enumerate(results):
        sent = result["sent"]
        assert sent["max"] == ((rows,), torch.float32), f"rank {rank}: shard_max gave {sent}"
        assert sent["sums"] == [((rows,), torch.float32)] * 2, f"rank {rank}: shard_sums {sent}"
        assert sent["bytes"] == 3 * 4 * rows, f"rank {rank} moves {sent['bytes']} bytes"
        got = result["logprobs"]
        assert torch.allclose(got.double(), want, rtol=1e-5, atol=1e-5), (
            f"rank {rank}: {got.tolist()} after the reductions, want {want.tolist()}"
        )
