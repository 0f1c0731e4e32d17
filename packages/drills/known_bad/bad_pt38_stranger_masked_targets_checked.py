"""A stranger's PT38 that checks every target against the vocabulary, masked positions
included, and reads the target logit at masked positions too: a masked row holding the
usual ignore id (-1, or past V) is rejected instead of giving 0."""

import torch

VARIABLE = "DRILL_PT38_MODULE"
EXPECTED_OWNER = "pt38"


def shard_max(shard):
    return shard.float().amax(dim=-1)


def shard_sums(shard, targets, offset, global_max):
    logits = shard.float()
    exp_sum = torch.exp(logits - global_max[:, None]).sum(dim=-1)
    local = targets - offset
    here = (local >= 0) & (local < shard.shape[1])
    picked = logits.gather(1, local.clamp(0, shard.shape[1] - 1)[:, None])[:, 0]
    return exp_sum, torch.where(here, picked, 0.0)


def vocab_parallel_logprobs(shards, targets, valid=None):
    vocab = sum(s.shape[1] for s in shards)
    if bool(((targets < 0) | (targets >= vocab)).any()):
        raise ValueError(f"targets must lie in [0, {vocab})")
    global_max = torch.stack([shard_max(s) for s in shards]).amax(dim=0)
    exp_sum = torch.zeros_like(global_max)
    target_logit = torch.zeros_like(global_max)
    offset = 0
    for s in shards:
        e, t = shard_sums(s, targets, offset, global_max)
        exp_sum, target_logit = exp_sum + e, target_logit + t
        offset += s.shape[1]
    logprobs = target_logit - global_max - exp_sum.log()
    return logprobs if valid is None else torch.where(valid, logprobs, 0.0)
