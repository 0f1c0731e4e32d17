"""A stranger's PT27 that reads the buffer's storage as if it were contiguous: flat index
row * T + position into a raw 1-D view, wrong for a transposed or strided buffer."""

import torch

VARIABLE = "DRILL_PT27_MODULE"
EXPECTED_OWNER = "pt27"


def materialize_chunks(token_buffer, starts, counts):
    B, T = token_buffer.shape
    if bool((counts < 0).any()):
        raise ValueError("counts must be >= 0")
    if bool((starts < 0).any()) or bool((starts + counts > T).any()):
        raise ValueError("starts + counts passes the buffer")
    offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)]).long()
    row_ids = torch.repeat_interleave(torch.arange(B, device=token_buffer.device), counts.long())
    positions = starts.long()[row_ids] + torch.arange(len(row_ids)) - offsets[row_ids]
    raw = token_buffer.as_strided((B * T,), (1,), token_buffer.storage_offset())
    return raw[row_ids * T + positions], row_ids, positions, offsets
