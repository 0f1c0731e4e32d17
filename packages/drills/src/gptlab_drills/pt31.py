"""PT31 reference: the supplied decode step split into a tensor core and an eager wrapper.

decode_core(logits, lengths, finished, scores, eos_id) -> (tokens, finished, scores)
    The step's tensor math with no graph break: `torch.compile(decode_core,
    fullgraph=True)` traces it whole, for any batch size B and chunk length T.
    logits [B, T, V] right-padded; lengths [B] int64 in [1, T]; finished [B] bool;
    scores [B] float32; eos_id an int. Row b reads its last real position, lengths[b] - 1:
    tokens[b] = argmax of log_softmax(that row) and the row's score gains that log-prob,
    unless the row was finished: then it emits eos_id and gains 0. A row is finished after
    the step when it was before or just emitted eos_id. Returns new tensors: tokens [B]
    int64, finished [B] bool, scores [B] float32; the inputs are only read.
decode_step(logits, lengths, finished, scores, eos_id, history) -> (..., live)
    The eager boundary, the start's signature: runs the core, then the side effects the
    compiler cannot hold (append tokens to history, print, `.item()` for the host's stop test).
graph_breaks() -> ((line, kind), ...)
    Each graph break torch._dynamo.explain reports for the start's decode_step, as
    (the start's source line, the break's kind), stated by the learner.
"""

from __future__ import annotations

import torch
from torch import Tensor


def graph_breaks() -> tuple[tuple[str, str], ...]:
    """The start's breaks as torch._dynamo.explain(decode_step)(...) reports them, with and
    without a finished row: "generic_jump TensorVariable()", "Failed to trace builtin
    operator `print`", "Unsupported Tensor.item() call with capture_scalar_outputs=False"."""
    return (
        ("if finished.any():", "data-dependent branch"),
        ('print("step", len(history), "tokens", tokens)', "print"),
        ("live = int((~finished).sum().item())", "Tensor.item"),
    )


def decode_core(
    logits: Tensor, lengths: Tensor, finished: Tensor, scores: Tensor, eos_id: int
) -> tuple[Tensor, Tensor, Tensor]:
    """One greedy step as tensor ops only: the branch on `finished` became torch.where."""
    rows = torch.arange(logits.shape[0], device=logits.device)
    last = logits[rows, lengths - 1].float()
    best, tokens = torch.log_softmax(last, dim=-1).max(dim=-1)
    tokens = torch.where(finished, eos_id, tokens)  # both outcomes, row by row
    best = torch.where(finished, 0.0, best)
    return tokens, finished | (tokens == eos_id), scores + best


def decode_step(
    logits: Tensor, lengths: Tensor, finished: Tensor, scores: Tensor, eos_id: int, history: list
) -> tuple[Tensor, Tensor, Tensor, int]:
    """The core (compile it if you like), then the step's side effects, eagerly."""
    tokens, finished, scores = decode_core(logits, lengths, finished, scores, eos_id)
    history.append(tokens)
    live = int((~finished).sum().item())  # the host needs a Python int to stop its loop
    print("step", len(history) - 1, "tokens", tokens.tolist(), "live", live)
    return tokens, finished, scores, live


__all__ = ["decode_core", "decode_step", "graph_breaks"]
