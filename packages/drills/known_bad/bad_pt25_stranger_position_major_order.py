"""A stranger's PT25 that flattens the [B, K + 1] table column by column: every row's first
token, then every row's second, so the tokens of one request are interleaved with others'."""

import torch

VARIABLE = "DRILL_PT25_MODULE"
EXPECTED_OWNER = "pt25"


def commit_speculation(draft, accepted, bonus, positions):
    B, K = draft.shape
    if bool(((accepted < 0) | (accepted > K)).any()):
        raise ValueError("accepted must lie in [0, K]")
    if bool((positions.long() > torch.iinfo(positions.dtype).max - accepted.long() - 1).any()):
        raise ValueError("positions overflow")
    mask = torch.arange(K, device=draft.device) < accepted[:, None]
    # each row's bonus sits right after its last accepted draft, then read position-major
    slots = torch.cat([draft, torch.zeros_like(draft[:, :1])], dim=1)
    slots[torch.arange(B), accepted.long()] = bonus.to(draft.dtype)
    taken = torch.arange(K + 1, device=draft.device) <= accepted[:, None]
    rows = torch.arange(B, device=draft.device)[:, None].expand(B, K + 1)
    tokens, row_ids = slots.t()[taken.t()], rows.t()[taken.t()]
    return tokens, row_ids, positions + accepted + 1, mask
