"""A stranger's PT27 whose offsets list only the requests that were scheduled (count > 0):
a zero-count row has no entry, so every later request's offsets shift."""

import torch

VARIABLE = "DRILL_PT27_MODULE"
EXPECTED_OWNER = "pt27"


def materialize_chunks(token_buffer, starts, counts):
    T = token_buffer.shape[1]
    if bool((counts < 0).any()):
        raise ValueError("counts must be >= 0")
    if bool((starts < 0).any()) or bool((starts + counts > T).any()):
        raise ValueError("starts + counts passes the buffer")
    tokens, row_ids, positions, offsets = [], [], [], [0]
    for b, (start, count) in enumerate(zip(starts.tolist(), counts.tolist())):
        if count == 0:
            continue
        tokens.append(token_buffer[b, start : start + count])
        row_ids += [b] * count
        positions += range(start, start + count)
        offsets.append(offsets[-1] + count)
    device = token_buffer.device
    flat = torch.cat(tokens) if tokens else token_buffer.new_empty(0)
    as_long = lambda values: torch.tensor(values, dtype=torch.long, device=device)  # noqa: E731
    return flat, as_long(row_ids), as_long(positions), as_long(offsets)
