"""A stranger's PT27 from the kit's words alone: the two rejections the kit names (negative
counts, out-of-range ranges; messages naming the value), then a [B, T] mask
start <= t < start + count whose nonzero coordinates are already row-major; int32 offsets;
nothing else validated."""

import torch

VARIABLE = "DRILL_PT27_MODULE"


def materialize_chunks(token_buffer, starts, counts):
    T = token_buffer.shape[1]
    for s, c in zip(starts.tolist(), counts.tolist()):
        if c < 0:
            raise ValueError(f"count {c} is negative")
        if s < 0 or s + c > T:
            raise ValueError(f"range [{s}, {s + c}) is outside [0, {T}]")
    t = torch.arange(T, device=token_buffer.device)
    mask = (t >= starts[:, None]) & (t < (starts + counts)[:, None])
    row_ids, positions = mask.nonzero(as_tuple=True)
    offsets = torch.zeros(len(counts) + 1, dtype=torch.int32, device=token_buffer.device)
    offsets[1:] = counts.cumsum(0)
    return token_buffer[row_ids, positions], row_ids, positions, offsets
