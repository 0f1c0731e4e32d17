"""PT31 supplied artifact: one greedy decode step that will not compile whole.

decode_step(logits, lengths, finished, scores, eos_id, history) -> (tokens, finished,
scores, live). logits [B, T, V] is a right-padded chunk; row b's next token comes from its
last real position, lengths[b] - 1 (lengths [B] int64 in [1, T]). finished [B] bool marks
rows already done: they emit eos_id and score nothing. scores [B] float32 is each row's
running sum of chosen-token log-probabilities. The step appends its tokens to `history`
(a list), prints a progress line, and returns `live`, the number of rows still going, so
the caller's loop knows when to stop.

Reported: eager decoding is right, but `torch.compile(decode_step, fullgraph=True)` fails,
and without fullgraph the step runs as several graphs stitched by Python.
"""

from __future__ import annotations

import torch
from torch import Tensor


def decode_step(
    logits: Tensor, lengths: Tensor, finished: Tensor, scores: Tensor, eos_id: int, history: list
) -> tuple[Tensor, Tensor, Tensor, int]:
    rows = torch.arange(logits.shape[0], device=logits.device)
    last = logits[rows, lengths - 1].float()
    logprobs = torch.log_softmax(last, dim=-1)
    best, tokens = logprobs.max(dim=-1)
    if finished.any():
        tokens = torch.where(finished, eos_id, tokens)
        best = torch.where(finished, 0.0, best)
    print("step", len(history), "tokens", tokens)
    history.append(tokens)
    finished = finished | (tokens == eos_id)
    live = int((~finished).sum().item())
    return tokens, finished, scores + best, live


__all__ = ["decode_step"]
