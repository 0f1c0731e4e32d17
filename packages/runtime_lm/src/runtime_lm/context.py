"""The attention context the harness supplies: where each request's rows begin.

vLLM hands its attention layers per-batch metadata through a forward context set
around the model call, not through ``forward``'s arguments; this is that context cut
down to what causal attention over flat rows needs. ``query_start_loc`` [B+1] (int64,
0 first, nondecreasing, last = N) says request b owns rows [q[b], q[b+1]); a row sees
the rows of its own request up to itself, in row order. Positions (``forward``'s
argument) only rotate queries and keys. Unset (None): the N rows are one request.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor

from modern_lm import ArgumentTypeError

_query_start_loc: Tensor | None = None  # the context of the next forward calls


def set_attention_context(query_start_loc: Tensor | None) -> None:
    """Set the request offsets every later forward uses (None: one request)."""
    global _query_start_loc
    if query_start_loc is not None:
        query_start_loc = _checked(query_start_loc)
    _query_start_loc = query_start_loc


def get_attention_context() -> Tensor | None:
    return _query_start_loc


@contextmanager
def attention_context(query_start_loc: Tensor | None) -> Iterator[None]:
    """``set_attention_context`` for a block, then the context that was set before."""
    previous = _query_start_loc
    set_attention_context(query_start_loc)
    try:
        yield
    finally:
        set_attention_context(previous)


def _checked(query_start_loc: object) -> Tensor:
    if not isinstance(query_start_loc, Tensor):
        raise ArgumentTypeError(
            f"query_start_loc must be a Tensor, got {type(query_start_loc).__name__}"
        )
    offsets = query_start_loc
    if offsets.dtype != torch.long or offsets.dim() != 1 or offsets.numel() < 2:
        raise ValueError(
            f"query_start_loc must be a long [B+1] tensor, got {offsets.dtype} "
            f"{tuple(offsets.shape)}"
        )
    if int(offsets[0]) != 0 or bool((offsets[1:] < offsets[:-1]).any()):
        raise ValueError(f"query_start_loc must start at 0 and never decrease: {offsets.tolist()}")
    return offsets.detach().clone()  # the caller's later writes do not move the context


def causal_mask(rows: int, device: torch.device) -> Tensor:
    """[N, N] bool, True where row i may attend row j: same request and j <= i."""
    offsets = _query_start_loc
    index = torch.arange(rows, device=device)
    causal = index[None, :] <= index[:, None]
    if offsets is None:
        return causal
    if int(offsets[-1]) != rows:
        raise ValueError(f"query_start_loc {offsets.tolist()} does not end at the {rows} rows")
    request = torch.searchsorted(offsets[1:].to(device), index, right=True)
    return causal & (request[:, None] == request[None, :])


__all__ = ["attention_context", "causal_mask", "get_attention_context", "set_attention_context"]
