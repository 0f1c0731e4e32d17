"""PT38 vocab-parallel logprobs (transfer case; owner P28).

The vocabulary is split over R ranks: rank r holds logits[:, offset_r : offset_r + V_r].
The target's log-probability needs the row's max and exp-sum over the WHOLE vocabulary,
and the target's logit from the one shard that holds it; no rank ever sees all V logits:

    m      = max_r shard_max(shard_r)                 (an all-reduce MAX of [N])
    s, t   = sum_r shard_sums(shard_r, targets, offset_r, m)   (an all-reduce SUM of 2 x [N])
    logp   = t - m - log(s)                           (0 where a position is masked)

shard_sums gives sum(exp(shard - m)) and the target's logit where the target lies on the
shard (else 0, so the sum over ranks is the target's logit). Every statistic is fp32
(or fp64 for fp64 logits): a bf16 exp-sum over a vocabulary loses the answer.

Shapes: shard [N, V_r]; targets [N] int global ids; valid [N] bool or None (all valid);
-> [N] fp32 (fp64 for fp64 logits). Targets at masked positions are never read.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def shard_max(shard: Tensor) -> Tensor:
    """This rank's row max [N], in the statistics dtype."""
    _check_shard(shard)
    return shard.to(_stats_dtype(shard)).amax(dim=-1)


def shard_sums(
    shard: Tensor, targets: Tensor, offset: int, global_max: Tensor
) -> tuple[Tensor, Tensor]:
    """This rank's exp-sum against the global max, and its part of the target logits."""
    _check_shard(shard)
    logits = shard.to(_stats_dtype(shard))
    exp_sum = (logits - global_max[:, None]).exp().sum(dim=-1)
    local = targets.long() - offset
    here = (local >= 0) & (local < shard.shape[-1])
    picked = logits.gather(-1, local.clamp(0, max(shard.shape[-1] - 1, 0))[:, None])[:, 0]
    return exp_sum, torch.where(here, picked, torch.zeros_like(picked))


def vocab_parallel_logprobs(
    shards: list[Tensor], targets: Tensor, valid: Tensor | None = None
) -> Tensor:
    """log_softmax(cat(shards))[n, targets[n]] without concatenating; 0 where masked."""
    _check(shards, targets, valid)
    offsets = [sum(s.shape[-1] for s in shards[:r]) for r in range(len(shards))]
    global_max = torch.stack([shard_max(s) for s in shards]).amax(dim=0)
    sums = [shard_sums(s, targets, o, global_max) for s, o in zip(shards, offsets, strict=True)]
    exp_sum = torch.stack([e for e, _ in sums]).sum(dim=0)
    target_logit = torch.stack([t for _, t in sums]).sum(dim=0)
    logprobs = target_logit - global_max - exp_sum.log()
    return logprobs if valid is None else torch.where(valid, logprobs, 0.0)


def _stats_dtype(shard: Tensor) -> torch.dtype:
    return torch.float64 if shard.dtype == torch.float64 else torch.float32


def _check_shard(shard: Tensor) -> None:
    if not isinstance(shard, Tensor) or shard.dim() != 2 or not shard.is_floating_point():
        raise ValueError(f"a shard must be a floating tensor [N, V_r], got {described(shard)}")


def _check(shards: list[Tensor], targets: Tensor, valid: Tensor | None) -> None:
    """Kinds and shapes, then every valid target inside the global vocabulary [0, V)."""
    if not isinstance(shards, (list, tuple)) or not shards:
        raise ValueError(f"shards must be a non-empty list of tensors, got {described(shards)}")
    for shard in shards:
        _check_shard(shard)
    if not isinstance(targets, Tensor) or targets.is_floating_point() or targets.dim() != 1:
        raise ValueError(f"targets must be integer ids [N], got {described(targets)}")
    if any(s.shape[0] != targets.shape[0] for s in shards):
        raise ValueError(f"shards {[described(s) for s in shards]} and targets differ in N")
    if valid is not None and (
        not isinstance(valid, Tensor) or valid.dtype != torch.bool or valid.shape != targets.shape
    ):
        raise ValueError(f"valid must be None or bool [N], got {described(valid)}")
    vocab = sum(s.shape[-1] for s in shards)
    read = targets if valid is None else targets[valid]
    if bool(((read < 0) | (read >= vocab)).any()):
        raise ValueError(f"targets {read.tolist()} reach outside the vocabulary [0, {vocab})")


__all__ = ["shard_max", "shard_sums", "vocab_parallel_logprobs"]
