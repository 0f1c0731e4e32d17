"""PT39 on two real Gloo ranks: each rank's local_topk is all that crosses the wire.

Each rank holds its own vocab shard of the same logits (built from a seed on each rank),
calls local_topk, all-gathers exactly what it returned (values and global ids), and
merges with merge_topk. The bytes moved are counted from the tensors the candidate
returned, as the test holds them: N*k values and N*k ids per rank, never N*V_r logits.
"""

from __future__ import annotations

import pytest
import torch

from gptlab_testkit import candidate
from gptlab_testkit.rank_pair import torch_beside

drill = candidate("DRILL_PT39_MODULE")
dist = torch_beside(drill, "torch.distributed")

pytestmark = [pytest.mark.owner("pt39"), pytest.mark.contract]

WORLD = 2


def logits(rows: int, vocab: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(-5, 5, (rows, vocab), generator=generator).float()


def oracle(full: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    ranked = torch.sort(full, dim=-1, descending=True, stable=True)
    return ranked.values[:, :k], ranked.indices[:, :k]


# ---- the job: module-level, run as job(rank, *args) on each rank ----


def sharded_topk(rank, rows, widths, k, seed):
    full = logits(rows, sum(widths), seed)
    offset = sum(widths[:rank])
    shard = full[:, offset : offset + widths[rank]].clone()
    values, ids = drill.local_topk(shard, k, offset)
    sent = {
        "values": tuple(values.shape),
        "ids": tuple(ids.shape),
        "bytes": values.numel() * values.element_size() + ids.numel() * ids.element_size(),
    }
    if sent["values"] != (rows, k) or sent["ids"] != (rows, k):
        return {"sent": sent}  # both ranks stop here: no collective on a wrong shape
    gathered_values = torch.empty(WORLD * rows, k, dtype=values.dtype)
    gathered_ids = torch.empty(WORLD * rows, k, dtype=ids.dtype)
    dist.all_gather_into_tensor(gathered_values, values.contiguous())
    dist.all_gather_into_tensor(gathered_ids, ids.contiguous())

    def per_row(gathered: torch.Tensor) -> torch.Tensor:  # [R*N, k] -> [N, R*k]
        return gathered.view(WORLD, rows, k).transpose(0, 1).reshape(rows, WORLD * k)

    merged_values, merged_ids = drill.merge_topk(per_row(gathered_values), per_row(gathered_ids), k)
    return {"sent": sent, "values": merged_values.clone(), "ids": merged_ids.clone()}


@pytest.mark.clause("PT39.8")
@pytest.mark.parametrize(
    ("rows", "widths", "k"),
    [(3, (8, 8), 4), (4, (9, 7), 1), (2, (6, 6), 6)],
    ids=["k=4", "uneven shards, k=1", "k = V_r"],
)
def test_only_k_candidates_per_row_leave_each_rank(two_ranks, rows, widths, k):
    seed = rows + k
    results = two_ranks.run("sharded_topk", [(rows, widths, k, seed)] * WORLD)
    want_values, want_ids = oracle(logits(rows, sum(widths), seed), k)
    for rank, result in enumerate(results):
        sent = result["sent"]
        assert sent["values"] == (rows, k) and sent["ids"] == (rows, k), (
            f"rank {rank} (V_r={widths[rank]}) sends values {sent['values']} and ids "
            f"{sent['ids']}: want [{rows}, {k}] each"
        )
        # fp32 values and int64 ids: (4 + 8) bytes a candidate, k candidates a row
        assert sent["bytes"] == rows * k * (4 + 8), f"rank {rank} moves {sent['bytes']} bytes"
        assert torch.equal(result["values"], want_values), f"rank {rank}: merged values"
        assert torch.equal(result["ids"], want_ids), f"rank {rank}: merged ids"
