"""A stranger's PT25 whose new positions count only the accepted drafts: the bonus token is
committed but the request's position does not move past it."""

import torch

VARIABLE = "DRILL_PT25_MODULE"
EXPECTED_OWNER = "pt25"


def commit_speculation(draft, accepted, bonus, positions):
    B, K = draft.shape
    if bool(((accepted < 0) | (accepted > K)).any()):
        raise ValueError("accepted must lie in [0, K]")
    if bool((positions.long() > torch.iinfo(positions.dtype).max - accepted.long() - 1).any()):
        raise ValueError("positions overflow")
    counts = accepted.long() + 1
    row_ids = torch.repeat_interleave(torch.arange(B, device=draft.device), counts)
    starts = torch.cumsum(counts, 0) - counts
    step = torch.arange(int(counts.sum()), device=draft.device) - starts[row_ids]
    is_bonus = step == accepted.long()[row_ids]
    drafted = draft[row_ids, step.clamp(max=max(K - 1, 0))] if K else bonus[row_ids]
    tokens = torch.where(is_bonus, bonus.to(draft.dtype)[row_ids], drafted)
    mask = torch.arange(K, device=draft.device) < accepted[:, None]
    return tokens, row_ids, positions + accepted, mask
