"""PT25 speculative token commit (transfer case; owner M10).

After verification each row b keeps its first accepted[b] drafted tokens and one bonus
token (the target's own token at the first rejection, or after the last draft):

    row b commits  draft[b, :accepted[b]]  then  bonus[b]     (accepted[b] + 1 tokens)

The committed tokens of every row go to one flat list, row after row (row-major), each
with its row id; a row's next position is positions[b] + accepted[b] + 1; the cache-commit
mask [B, K] is True for the drafted tokens whose cache entries stay (k < accepted[b]): the
bonus has no entry yet, it is the next step's input. One boolean selection over the
[B, K + 1] table of drafts and bonuses, no loop over rows.

Shapes: draft [B, K] integer, accepted [B] integer in [0, K], bonus [B] integer, positions
[B] integer -> (tokens [N] draft's dtype, row_ids [N] int64, new_positions [B] positions'
dtype, commit_mask [B, K] bool) with N = sum(accepted) + B.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def commit_speculation(
    draft: Tensor, accepted: Tensor, bonus: Tensor, positions: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(tokens, row_ids, new_positions, commit_mask) of the accepted drafts and each bonus."""
    _check(draft, accepted, bonus, positions)
    B, K = draft.shape
    commit_mask = torch.arange(K, device=draft.device) < accepted[:, None]  # [B, K]
    slots = torch.cat([draft, bonus.to(draft.dtype)[:, None]], dim=1)  # [B, K + 1]
    taken = torch.cat([commit_mask, commit_mask.new_ones(B, 1)], dim=1)  # the bonus always
    rows = torch.arange(B, device=draft.device)[:, None].expand(B, K + 1)
    new_positions = positions + accepted.to(positions.dtype) + 1
    return slots[taken], rows[taken], new_positions, commit_mask


def _check(draft: Tensor, accepted: Tensor, bonus: Tensor, positions: Tensor) -> None:
    """Reject kinds, shapes, devices, acceptances outside [0, K] and overflow before work."""
    named = {"draft": draft, "accepted": accepted, "bonus": bonus, "positions": positions}
    for name, tensor in named.items():
        if not isinstance(tensor, Tensor) or tensor.is_floating_point() or tensor.is_complex():
            raise ValueError(f"{name} must be an integer tensor, got {described(tensor)}")
        if tensor.dtype == torch.bool:
            raise ValueError(f"{name} must be an integer tensor, got {described(tensor)}")
        if tensor.device != draft.device:
            raise ValueError(f"{name} is on {tensor.device}, draft on {draft.device}")
    if draft.dim() != 2:
        raise ValueError(f"draft must be [B, K], got {described(draft)}")
    B, K = draft.shape
    for name in ("accepted", "bonus", "positions"):
        if named[name].shape != (B,):
            raise ValueError(f"{name} must have shape [{B}], got {described(named[name])}")
    if not bool(((accepted >= 0) & (accepted <= K)).all()):
        raise ValueError(f"accepted must lie in [0, K={K}], got {accepted.tolist()}")
    if bool((positions < 0).any()):
        raise ValueError(f"positions must be >= 0, got {positions.tolist()}")
    # positions + accepted + 1 must fit positions' dtype (compared without overflowing)
    room = torch.iinfo(positions.dtype).max - accepted.long() - 1
    if bool((positions.long() > room).any()):
        raise ValueError(f"positions {positions.tolist()} overflow {positions.dtype}")


__all__ = ["commit_speculation"]
