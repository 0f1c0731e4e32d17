"""The causal LM loss: token t's logits predict label t + 1 (as tinygpt's: docs/contracts.md)."""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional

from .checks import ArgumentTypeError

IGNORE_INDEX = -100


def shifted_cross_entropy(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean cross-entropy of logits[:, :-1] against labels[:, 1:], skipping -100.

    A sum over the scored tokens divided by their count (at least 1): a batch with
    nothing to score gives a zero still attached to the graph, not the plain mean's NaN.
    """
    if not isinstance(labels, Tensor):
        raise ArgumentTypeError(f"labels must be a Tensor, got {type(labels).__name__}")
    if labels.dtype != torch.long or labels.shape != logits.shape[:2]:
        raise ValueError(
            f"labels must be long {tuple(logits.shape[:2])} like input_ids, got "
            f"{labels.dtype} {tuple(labels.shape)}"
        )
    shift_logits = logits[:, :-1].reshape(-1, logits.shape[-1])
    shift_labels = labels[:, 1:].reshape(-1)
    total = functional.cross_entropy(
        shift_logits, shift_labels, ignore_index=IGNORE_INDEX, reduction="sum"
    )
    return total / (shift_labels != IGNORE_INDEX).sum().clamp(min=1)


__all__ = ["IGNORE_INDEX", "shifted_cross_entropy"]
