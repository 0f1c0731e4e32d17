"""PT27 ragged scheduled-chunk materialization (transfer case; owner M04).

Each request b (a row of the token buffer) is scheduled for counts[b] tokens starting at
its position starts[b]: a prompt chunk of many tokens, one decode token, or none. The step
runs on them flat, request after request and in position order within a request:

    tokens   = cat_b token_buffer[b, starts[b] : starts[b] + counts[b]]
    row_ids  = b for each of row b's tokens
    positions = starts[b] + i for its i-th token (the position inside the request)
    offsets  = [0, counts[0], counts[0] + counts[1], ...]   (row b is offsets[b]:offsets[b+1])

One index per flat token (row id, position) and one advanced-indexing read of the buffer;
no loop over rows. N = sum(counts) is read on the host once, to size the flat tensors.

Shapes: token_buffer [B, T]; starts, counts [B] integer -> (tokens [N] buffer's dtype,
row_ids [N] int64, positions [N] int64, offsets [B + 1] int64).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._describe import described


def materialize_chunks(
    token_buffer: Tensor, starts: Tensor, counts: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(tokens, row_ids, positions, offsets) of every scheduled chunk, flat and row-major."""
    _check(token_buffer, starts, counts)
    device = token_buffer.device
    lengths = counts.long()
    offsets = torch.cat([lengths.new_zeros(1), lengths.cumsum(0)])  # [B + 1]
    N = int(offsets[-1])
    row_ids = torch.repeat_interleave(torch.arange(len(lengths), device=device), lengths)
    within = torch.arange(N, device=device) - offsets[row_ids]  # i, the step inside the chunk
    positions = starts.long()[row_ids] + within
    return token_buffer[row_ids, positions], row_ids, positions, offsets


def _check(token_buffer: Tensor, starts: Tensor, counts: Tensor) -> None:
    """Reject kinds, shapes, devices, negative counts and ranges outside the buffer first."""
    if not isinstance(token_buffer, Tensor) or token_buffer.dim() != 2:
        raise ValueError(f"token_buffer must be a 2-D tensor [B, T], got {described(token_buffer)}")
    B, T = token_buffer.shape
    for name, index in (("starts", starts), ("counts", counts)):
        if not isinstance(index, Tensor) or index.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"{name} must be an int32/int64 tensor, got {described(index)}")
        if index.shape != (B,):
            raise ValueError(f"{name} must have shape [{B}], got {tuple(index.shape)}")
        if index.device != token_buffer.device:
            raise ValueError(f"{name} is on {index.device}, token_buffer on {token_buffer.device}")
    if bool((counts < 0).any()):
        raise ValueError(f"counts must be >= 0, got {counts.tolist()}")
    if bool((starts < 0).any()) or bool((starts.long() + counts.long() > T).any()):
        raise ValueError(f"a range starts {starts.tolist()} + counts passes T={T}")


__all__ = ["materialize_chunks"]
