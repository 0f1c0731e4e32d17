"""PT30 scatter a decode result into persistent state (transfer case; owner P22).

The engine's per-request state lives across steps in fixed-capacity tensors, one row per
request slot. The state's form is this project's choice: a dict of four tensors,

    state["tokens"]       [R, C] integer   each row's tokens, valid up to its length
    state["lengths"]      [R]    integer   how many tokens the row holds (<= C)
    state["done"]         [R]    bool      the request has finished
    state["last_tokens"]  [R]    integer   the row's most recent token

A decode step sampled one token for each scheduled row; for i-th scheduled row r:

    tokens[r, lengths[r]] = sampled_tokens[i];  lengths[r] += 1
    last_tokens[r] = sampled_tokens[i];         done[r] |= finished[i]

written in place, all rows at once (one index_put per field). Every check runs before the
first write, so a rejected step leaves the state exactly as it was (atomic validation).

Shapes: scheduled_rows [N] integer, distinct, in [0, R); sampled_tokens [N] integer;
finished [N] bool -> None (the state is updated in place).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described

FIELDS = ("tokens", "lengths", "done", "last_tokens")


def apply_decode_step_(
    state: dict[str, Tensor], scheduled_rows: Tensor, sampled_tokens: Tensor, finished: Tensor
) -> None:
    """Append each scheduled row's sampled token and update its fields, in place."""
    _check_state(state)
    _check_step(state, scheduled_rows, sampled_tokens, finished)
    rows = scheduled_rows.long()
    tokens, lengths = state["tokens"], state["lengths"]
    tokens[rows, lengths[rows].long()] = sampled_tokens.to(tokens.dtype)
    lengths[rows] += 1
    state["last_tokens"][rows] = sampled_tokens.to(state["last_tokens"].dtype)
    state["done"][rows] |= finished


def _check_state(state: dict[str, Tensor]) -> None:
    """The four fields exist, agree on R, and have the kinds the step writes."""
    if not isinstance(state, dict) or any(not isinstance(state.get(f), Tensor) for f in FIELDS):
        raise ValueError(f"state must be a dict of tensors {FIELDS}, got {described(state)}")
    tokens = state["tokens"]
    if tokens.dim() != 2 or tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise ValueError(f"state tokens must be an integer [R, C] tensor, got {described(tokens)}")
    for name, dtype_ok in (("lengths", False), ("done", True), ("last_tokens", False)):
        field = state[name]
        if field.shape != tokens.shape[:1] or (field.dtype == torch.bool) != dtype_ok:
            raise ValueError(f"state {name} must be [{tokens.shape[0]}], got {described(field)}")
        if field.is_floating_point() or field.device != tokens.device:
            raise ValueError(f"state {name} must be an integer tensor on {tokens.device}")


def _check_step(
    state: dict[str, Tensor], scheduled_rows: Tensor, sampled_tokens: Tensor, finished: Tensor
) -> None:
    """Rows distinct and in range, one token and one flag per row, room for every token."""
    R, C = state["tokens"].shape
    named = {"scheduled_rows": scheduled_rows, "sampled_tokens": sampled_tokens,
             "finished": finished}  # fmt: skip
    for name, tensor in named.items():
        if not isinstance(tensor, Tensor) or tensor.is_floating_point() or tensor.dim() != 1:
            raise ValueError(f"{name} must be a 1-D integer/bool tensor, got {described(tensor)}")
        if tensor.device != state["tokens"].device:
            raise ValueError(f"{name} is on {tensor.device}, the state on another device")
    if scheduled_rows.dtype == torch.bool or sampled_tokens.dtype == torch.bool:
        raise ValueError("scheduled_rows and sampled_tokens must hold integers, not bools")
    if finished.dtype != torch.bool:
        raise ValueError(f"finished must be a bool tensor, got {described(finished)}")
    N = len(scheduled_rows)
    for name in ("sampled_tokens", "finished"):
        if len(named[name]) != N:
            raise ValueError(f"{name} has {len(named[name])} entries, scheduled_rows {N}")
    if bool(((scheduled_rows < 0) | (scheduled_rows >= R)).any()):
        raise ValueError(f"scheduled_rows must lie in [0, {R}), got {scheduled_rows.tolist()}")
    if len(torch.unique(scheduled_rows)) != N:
        raise ValueError(f"scheduled_rows repeat a row: {scheduled_rows.tolist()}")
    if bool((state["lengths"][scheduled_rows.long()] >= C).any()):
        raise ValueError(f"a scheduled row of {scheduled_rows.tolist()} is full (capacity {C})")


__all__ = ["FIELDS", "apply_decode_step_"]
