"""A stranger's PT39 that spreads k over the ranks: each rank sends only its best
ceil(k / R), as if the global top k came evenly from every shard."""

import torch

VARIABLE = "DRILL_PT39_MODULE"
EXPECTED_OWNER = "pt39"
WORLD_GUESS = 2  # the rank count local_topk cannot see; two ranks assumed


def local_topk(shard, k, offset):
    keep = min(-(-k // WORLD_GUESS), shard.shape[-1])
    order = torch.sort(shard, dim=-1, descending=True, stable=True).indices[:, :keep]
    return shard.gather(-1, order), order + offset


def merge_topk(values, ids, k):
    if k > values.shape[-1]:
        raise ValueError(f"k={k} is more than the candidates")
    by_id = ids.argsort(dim=-1, stable=True)
    ranked = torch.sort(values.gather(-1, by_id), dim=-1, descending=True, stable=True)
    order = by_id.gather(-1, ranked.indices[:, :k])
    return values.gather(-1, order), ids.gather(-1, order)


def global_topk(shards, k):
    vocab = sum(s.shape[-1] for s in shards)
    if not 1 <= k <= vocab:
        raise ValueError(f"k={k} is outside [1, {vocab}]")
    per_rank = -(-k // len(shards))
    found, offset = [], 0
    for s in shards:
        order = torch.sort(s, dim=-1, descending=True, stable=True).indices[:, :per_rank]
        found.append((s.gather(-1, order), order + offset))
        offset += s.shape[-1]
    values = torch.cat([v for v, _ in found], -1)
    ids = torch.cat([i for _, i in found], -1)
    if values.shape[-1] < k:  # too few candidates: pad from nowhere
        raise ValueError(f"k={k} is more than the candidates")
    return merge_topk(values, ids, k)
