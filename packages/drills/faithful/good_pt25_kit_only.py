"""A stranger's PT25 from the kit's words alone: the two rejections the kit names (acceptance
outside [0, K], position overflow; messages naming the value), then a plain loop over the
requests as a state machine, its lists turned into tensors at the end (int64 row ids and
positions); nothing else validated."""

import torch

VARIABLE = "DRILL_PT25_MODULE"


def commit_speculation(draft, accepted, bonus, positions):
    K = draft.shape[1]
    top = torch.iinfo(positions.dtype).max
    for a, p in zip(accepted.tolist(), positions.tolist()):
        if not 0 <= a <= K:
            raise ValueError(f"acceptance {a} is outside [0, {K}]")
        if p + a + 1 > top:
            raise ValueError(f"position {p} overflows after {a + 1} tokens")
    tokens, row_ids, new_positions, mask = [], [], [], []
    for b, (drafted, a, extra, p) in enumerate(
        zip(draft.tolist(), accepted.tolist(), bonus.tolist(), positions.tolist())
    ):
        committed = [*drafted[:a], extra]
        tokens += committed
        row_ids += [b] * len(committed)
        new_positions.append(p + len(committed))
        mask.append([k < a for k in range(K)])
    device = draft.device
    return (
        torch.tensor(tokens, dtype=draft.dtype, device=device),
        torch.tensor(row_ids, dtype=torch.long, device=device),
        torch.tensor(new_positions, dtype=torch.long, device=device),
        torch.tensor(mask, dtype=torch.bool, device=device).reshape(len(mask), K),
    )
