"""A stranger builds one square causal table over every position up to the largest seen
and indexes it by the positions (right values, but a mask far larger than Tq x Tk)."""

import torch

VARIABLE = "DRILL_PT17_MODULE"
EXPECTED_OWNER = "pt17"


def position_causal_mask(query_positions, key_positions, key_valid):
    if query_positions.ndim != 2 or key_positions.ndim != 2:
        raise ValueError("query_positions and key_positions must be [B, T]")
    if key_valid.shape != key_positions.shape:
        raise ValueError("key_valid must match key_positions")
    if query_positions.shape[0] != key_positions.shape[0]:
        raise ValueError("query_positions and key_positions batch sizes differ")
    if (query_positions.diff(dim=1) < 0).any():
        raise ValueError("query_positions must not decrease")
    for b in range(key_positions.shape[0]):
        kept = key_positions[b][key_valid[b]]
        if (kept.diff() < 0).any():
            raise ValueError("key_positions must not decrease among valid keys")
    top = int(max(query_positions.max(), key_positions.max())) + 1
    table = torch.ones(top, top, dtype=torch.bool, device=key_valid.device).tril()
    rows = table[query_positions]  # [B, Tq, top]
    allowed = torch.gather(rows, 2, key_positions[:, None, :].expand(-1, rows.shape[1], -1))
    return (allowed & key_valid[:, None, :]).unsqueeze(1)
