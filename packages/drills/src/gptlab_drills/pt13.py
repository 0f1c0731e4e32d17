"""PT13 masked next-token logprobs (transfer case; owner P08).

logits[b, t] scores the token targets[b, t] (the caller has already shifted targets by
one step). Each valid position gets its log-probability, every masked position exactly 0:

    token[b, t] = logits[b, t, targets[b, t]] - logsumexp(logits[b, t, :])   if valid[b, t]
    token[b, t] = 0                                                          otherwise
    sums[b]     = sum over t of token[b, t]

Log domain throughout: one logsumexp per position and one gather, never a [B, T, V]
probability tensor, so a probability that would underflow still has its finite logprob.
fp16/bf16 logits are read in fp32 and both results are fp32 (float64 logits stay float64).
`torch.where` (not a multiply by the mask) keeps a masked -inf or NaN out of the sums.

Shapes: logits [B, T, V] floating, V >= 1; targets [B, T] int32/int64, every id in
[0, V) even where masked; valid [B, T] bool -> (token [B, T], sums [B]).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def sequence_logprobs(logits: Tensor, targets: Tensor, valid: Tensor) -> tuple[Tensor, Tensor]:
    """(per-token logprobs [B, T], per-sequence sums [B]); masked positions are exactly 0."""
    _check(logits, targets, valid)
    work = logits.to(torch.promote_types(logits.dtype, torch.float32))
    picked = work.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)  # [B, T]
    token = torch.where(valid, picked - torch.logsumexp(work, dim=-1), 0.0)
    return token, token.sum(dim=-1)


def _check(logits: Tensor, targets: Tensor, valid: Tensor) -> None:
    """Reject kinds, shapes and out-of-vocabulary ids (masked ones too) before any work."""
    if not isinstance(logits, Tensor) or not logits.is_floating_point() or logits.dim() != 3:
        raise ValueError(f"logits must be a floating [B, T, V] tensor, got {described(logits)}")
    if not isinstance(targets, Tensor) or targets.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"targets must be an int32/int64 tensor, got {described(targets)}")
    if not isinstance(valid, Tensor) or valid.dtype != torch.bool:
        raise ValueError(f"valid must be a bool tensor, got {described(valid)}")
    B, T, V = logits.shape
    for name, tensor in (("targets", targets), ("valid", valid)):
        if tensor.shape != (B, T):
            raise ValueError(f"{name} must have shape [{B}, {T}], got {tuple(tensor.shape)}")
        if tensor.device != logits.device:
            raise ValueError(f"{name} is on {tensor.device}, logits on {logits.device}")
    if V == 0:
        raise ValueError("logits must have a vocabulary of at least one token (V >= 1)")
    if bool(((targets < 0) | (targets >= V)).any()):
        raise ValueError(f"targets hold an id outside [0, {V}): {targets.tolist()}")


__all__ = ["sequence_logprobs"]
