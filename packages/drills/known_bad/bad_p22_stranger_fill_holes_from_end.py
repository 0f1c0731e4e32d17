"""A stranger's compaction fills each finished row with the last live row (swap-remove):
fast and in bounds, but the live rows lose their order."""

import torch

VARIABLE = "DRILL_P22_MODULE"
EXPECTED_OWNER = "p22"


def compact_live_rows(fields, live):
    if live.dtype != torch.bool or live.dim() != 1:
        raise ValueError("live must be a 1-D bool mask")
    for name, field in fields.items():
        if field.shape[0] != live.shape[0]:
            raise ValueError(f"field {name} does not have one row per live entry")
    order = list(range(live.shape[0]))
    alive = live.tolist()
    left, right = 0, len(order) - 1
    while left <= right:
        if alive[left]:
            left += 1
        elif not alive[right]:
            right -= 1
        else:  # hole at left, live row at right: move it down
            order[left], order[right] = order[right], order[left]
            alive[left], alive[right] = True, False
            left, right = left + 1, right - 1
    n = int(live.sum())
    index = torch.tensor(order[:n], dtype=torch.long, device=live.device)
    old_to_new = torch.full_like(live, -1, dtype=torch.long)
    old_to_new[index] = torch.arange(n, device=live.device)
    return {name: field[index] for name, field in fields.items()}, old_to_new
