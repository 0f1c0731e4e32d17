"""A stranger's PT30 that writes the i-th sampled token into row i (the batch position) instead
of row scheduled_rows[i]: right only when the scheduled rows are 0, 1, ..., N - 1."""

import torch

VARIABLE = "DRILL_PT30_MODULE"
EXPECTED_OWNER = "pt30"


def apply_decode_step_(state, scheduled_rows, sampled_tokens, finished):
    N = len(scheduled_rows)
    if len(sampled_tokens) != N or len(finished) != N:
        raise ValueError("sampled_tokens and finished must match scheduled_rows")
    if len(torch.unique(scheduled_rows)) != N:
        raise ValueError("scheduled_rows repeat a row")
    C = state["tokens"].shape[1]
    if bool((state["lengths"][scheduled_rows] >= C).any()):
        raise ValueError("scheduled_rows: a row is full")
    rows = torch.arange(N, device=scheduled_rows.device)
    state["tokens"][rows, state["lengths"][rows]] = sampled_tokens.to(state["tokens"].dtype)
    state["lengths"][rows] += 1
    state["last_tokens"][rows] = sampled_tokens.to(state["last_tokens"].dtype)
    state["done"][rows] |= finished
