"""P12 beam step: extend K beams by one token and keep the K best of the K*V candidates.

Shapes: scores [B, K] cumulative log-probabilities (-inf marks an unused beam, as at the
first step); logits [B, K, V]; finished optional bool [B, K] with eos_token_id.
Candidate (k, v) scores scores[b, k] + log_softmax(logits[b, k])[v], in fp32. A finished
beam has one candidate only, (k, eos_token_id) at its unchanged score, so it competes
without multiplying. Returns (scores [B, K] fp32, descending; tokens [B, K] long;
parents [B, K] long). Ties: the lower flat index k * V + v first (lower parent, then
lower token), whatever the backend's topk would do.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._describe import described


def beam_step(
    scores: Tensor,
    logits: Tensor,
    finished: Tensor | None = None,
    eos_token_id: int | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """(new scores, tokens, parents), each [B, K]: the K best one-token extensions per row."""
    _check(scores, logits, finished, eos_token_id)
    B, K, V = logits.shape
    candidates = scores.float()[:, :, None] + torch.log_softmax(logits.float(), dim=-1)
    if finished is not None and eos_token_id is not None:
        only_eos = torch.full_like(candidates, float("-inf"))
        only_eos[:, :, eos_token_id] = scores.float()
        candidates = torch.where(finished[:, :, None], only_eos, candidates)
    # A stable descending sort keeps tied candidates in flat-index order: the tie rule.
    ordered, flat = torch.sort(candidates.reshape(B, K * V), dim=-1, descending=True, stable=True)
    flat = flat[:, :K]
    return ordered[:, :K], flat % V, flat // V


def _check(
    scores: Tensor, logits: Tensor, finished: Tensor | None, eos_token_id: int | None
) -> None:
    """Reject bad shapes, dtypes and values before any arithmetic."""
    if not isinstance(scores, Tensor) or scores.dim() != 2 or not scores.is_floating_point():
        raise ValueError(f"scores must be a floating [B, K] tensor, got {described(scores)}")
    if not isinstance(logits, Tensor) or logits.dim() != 3 or not logits.is_floating_point():
        raise ValueError(f"logits must be a floating [B, K, V] tensor, got {described(logits)}")
    if logits.shape[:2] != scores.shape or logits.shape[2] == 0:
        raise ValueError(f"logits {tuple(logits.shape)} do not fit scores {tuple(scores.shape)}")
    for name, tensor in (("scores", scores), ("logits", logits), ("finished", finished)):
        if (isinstance(tensor, Tensor) and tensor.device != scores.device) or scores.is_meta:
            raise ValueError(f"{name} must be on scores' device, not meta: {described(tensor)}")
    if torch.isnan(scores).any() or (scores == math.inf).any():
        raise ValueError("scores must not hold NaN or +inf (-inf marks an unused beam)")
    live = torch.ones_like(scores, dtype=torch.bool)
    if finished is not None:
        if not isinstance(finished, Tensor) or finished.dtype != torch.bool:
            raise ValueError(f"finished must be a bool tensor, got {described(finished)}")
        if finished.shape != scores.shape:
            raise ValueError(f"finished {tuple(finished.shape)} must match scores' shape")
        live = ~finished
    # A NaN or +inf logit, or a live beam with no finite logit, has no log-probabilities.
    empty = ~torch.isfinite(logits).any(dim=-1) & live
    if torch.isnan(logits).any() or (logits == math.inf).any() or empty.any():
        raise ValueError("logits must not hold NaN or +inf, nor a live beam with no finite logit")
    if finished is None:
        return
    V = logits.shape[2]
    if isinstance(eos_token_id, bool) or not isinstance(eos_token_id, int):
        raise ValueError(f"eos_token_id must be an int when finished is given: {eos_token_id!r}")
    if not 0 <= eos_token_id < V:
        raise ValueError(f"eos_token_id must be in 0..{V - 1}, got {eos_token_id}")


__all__ = ["beam_step"]
