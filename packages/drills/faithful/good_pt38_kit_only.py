"""A stranger's PT38 from the kit's words alone: only valid targets outside the vocabulary
rejected (the message naming the value), every statistic in float64 inside and the
logprobs cast to fp32, the target logit found by a Python loop over the shards with a
mask, and logsumexp written as max + log(sum) after the reductions."""

import torch

VARIABLE = "DRILL_PT38_MODULE"


def shard_max(shard):
    return shard.double().max(dim=1).values.float()


def shard_sums(shard, targets, offset, global_max):
    logits = shard.double()
    exp_sum = torch.exp(logits - global_max.double().unsqueeze(1)).sum(dim=1)
    target_logit = torch.zeros(shard.shape[0], dtype=torch.float64)
    inside = (targets >= offset) & (targets < offset + shard.shape[1])
    rows = torch.nonzero(inside).flatten()
    target_logit[rows] = logits[rows, targets[rows] - offset]
    return exp_sum.float(), target_logit.float()


def vocab_parallel_logprobs(shards, targets, valid=None):
    vocab = sum(shard.shape[1] for shard in shards)
    keep = torch.ones_like(targets, dtype=torch.bool) if valid is None else valid
    for position in torch.nonzero(keep).flatten().tolist():
        target = int(targets[position])
        if target < 0 or target >= vocab:
            raise ValueError(f"{target} is not an id of a vocabulary of {vocab}")
    global_max = torch.stack([shard.double().max(dim=1).values for shard in shards]).max(0).values
    exp_sum = torch.zeros(targets.shape[0], dtype=torch.float64)
    target_logit = torch.zeros(targets.shape[0], dtype=torch.float64)
    offset = 0
    for shard in shards:
        logits = shard.double()
        exp_sum += torch.exp(logits - global_max.unsqueeze(1)).sum(dim=1)
        inside = keep & (targets >= offset) & (targets < offset + shard.shape[1])
        rows = torch.nonzero(inside).flatten()
        target_logit[rows] = logits[rows, targets[rows] - offset]
        offset += shard.shape[1]
    logprobs = target_logit - global_max - torch.log(exp_sum)
    return torch.where(keep, logprobs, torch.zeros_like(logprobs)).float()
