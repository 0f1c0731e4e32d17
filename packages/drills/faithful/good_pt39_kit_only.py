"""A stranger's PT39 from the kit's words alone: k checked against the vocabulary only
(TypeError for a k that is not an int, the message naming the value), each rank's
candidates by an argsort of the negated shard, and the merge as a Python sort per row on
the key (-value, global id), written back into new tensors."""

import torch

VARIABLE = "DRILL_PT39_MODULE"


def local_topk(shard, k, offset):
    order = torch.argsort(-shard.double(), dim=1, stable=True)[:, : min(k, shard.shape[1])]
    return torch.gather(shard, 1, order), order.to(torch.int64) + offset


def merge_topk(values, ids, k):
    rows = []
    for row_values, row_ids in zip(values.tolist(), ids.tolist()):
        ranked = sorted(zip(row_values, row_ids), key=lambda pair: (-pair[0], pair[1]))
        rows.append(ranked[:k])
    out_values = torch.tensor([[v for v, _ in row] for row in rows], dtype=values.dtype)
    out_ids = torch.tensor([[i for _, i in row] for row in rows], dtype=torch.int64)
    return out_values.reshape(values.shape[0], k), out_ids.reshape(values.shape[0], k)


def global_topk(shards, k):
    if not isinstance(k, int):
        raise TypeError(f"k must be an int, got {k!r}")
    vocab = sum(shard.shape[1] for shard in shards)
    if k < 1 or k > vocab:
        raise ValueError(f"{k} is not a top-k size for a vocabulary of {vocab}")
    all_values, all_ids, offset = [], [], 0
    for shard in shards:
        values, ids = local_topk(shard, k, offset)
        all_values.append(values)
        all_ids.append(ids)
        offset += shard.shape[1]
    return merge_topk(torch.cat(all_values, dim=1), torch.cat(all_ids, dim=1), k)
