"""PT22 packed prompt + top logprobs (transfer case; owner M04).

N prompt tokens of B requests are packed row-major; request r holds the flat rows
offsets[r] .. offsets[r+1] - 1. Row n's logits predict the token at row n + 1 of the same
request, so the token at row n > offsets[r] is scored with the previous row's logits:

    logprobs[n]     = log_softmax(logits[n - 1])[token_ids[n]]
    top_ids[n]      = the top_k ids of logits[n - 1], highest first, ties by lower id
    top_logprobs[n] = log_softmax(logits[n - 1])[top_ids[n]]
    ranks[n]        = 1 + #{v : logits[n - 1, v] > logits[n - 1, token_ids[n]]}

A request's first token has no previous row of its own: it gets the sentinel (NaN logprobs,
id -1, rank -1), and the last row of the request before it never reaches it. Scores are
fp32 (log_softmax is stable); ids and ranks come from the logits' own order, so they are exact.

Shapes: logits [N, V] float; token_ids [N] int; offsets [B + 1] int (0 first, N last,
nondecreasing); top_k an int in [0, V] -> (logprobs [N] fp32, top_ids [N, top_k] int64,
top_logprobs [N, top_k] fp32, ranks [N] int64).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described

NO_ID = -1  # top id and rank of a request's first token


def packed_prompt_logprobs(
    logits: Tensor, token_ids: Tensor, offsets: Tensor, top_k: int
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(logprobs [N], top_ids [N, top_k], top_logprobs [N, top_k], ranks [N])."""
    _check(logits, token_ids, offsets, top_k)
    N = logits.shape[0]
    previous = (torch.arange(N, device=logits.device) - 1).clamp(min=0)  # [N]
    scores = logits.float()[previous]  # [N, V]: row n holds the logits that predict token n
    table = torch.log_softmax(scores, dim=-1)
    targets = token_ids.long()[:, None]  # [N, 1]
    logprobs = table.gather(1, targets).squeeze(1)
    ranks = 1 + (scores > scores.gather(1, targets)).sum(1)
    top_ids = torch.sort(scores, dim=1, descending=True, stable=True).indices[:, :top_k]
    top_logprobs = table.gather(1, top_ids)
    first = _first_tokens(offsets, N)
    logprobs[first], top_logprobs[first] = float("nan"), float("nan")
    ranks[first], top_ids[first] = NO_ID, NO_ID
    return logprobs, top_ids, top_logprobs, ranks


def _first_tokens(offsets: Tensor, N: int) -> Tensor:
    """[N] bool: True at each nonempty request's first row (it has no previous row)."""
    starts, ends = offsets[:-1].long(), offsets[1:].long()
    first = torch.zeros(N, dtype=torch.bool, device=offsets.device)
    first[starts[ends > starts]] = True
    return first


def _check(logits: Tensor, token_ids: Tensor, offsets: Tensor, top_k: int) -> None:
    """Kinds and shapes, then offsets, top_k and ids: all before any score is computed."""
    if not isinstance(logits, Tensor) or logits.dim() != 2 or not logits.is_floating_point():
        raise ValueError(f"logits must be a 2-D float tensor [N, V], got {described(logits)}")
    N, V = logits.shape
    for name, index in (("token_ids", token_ids), ("offsets", offsets)):
        if not isinstance(index, Tensor) or index.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"{name} must be an int32/int64 tensor, got {described(index)}")
        if index.dim() != 1 or index.device != logits.device:
            raise ValueError(f"{name} must be 1-D on {logits.device}, got {described(index)}")
    if token_ids.shape[0] != N:
        raise ValueError(f"token_ids must have shape [{N}], got {tuple(token_ids.shape)}")
    if isinstance(top_k, bool) or not isinstance(top_k, int):
        raise ValueError(f"top_k must be an int, got {described(top_k)}")
    if not 0 <= top_k <= V:
        raise ValueError(f"top_k must be in [0, {V}], got {top_k}")
    _check_offsets(offsets, N)
    if bool(((token_ids < 0) | (token_ids >= V)).any()):
        raise ValueError(f"token_ids hold an id outside [0, {V}): {token_ids.tolist()}")


def _check_offsets(offsets: Tensor, N: int) -> None:
    """[B + 1] with 0 first, N last, never decreasing."""
    if offsets.numel() == 0 or int(offsets[0]) != 0 or int(offsets[-1]) != N:
        raise ValueError(f"offsets must run from 0 to N={N}, got {offsets.tolist()}")
    if bool((offsets[1:] < offsets[:-1]).any()):
        raise ValueError(f"offsets must never decrease, got {offsets.tolist()}")


__all__ = ["NO_ID", "packed_prompt_logprobs"]
