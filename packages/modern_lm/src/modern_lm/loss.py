"""The causal LM loss: token t's logits predict label t + 1 (as tinygpt's: docs/contracts.md)."""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional

from .checks import ArgumentTypeError

IGNORE_INDEX = -100


def check_labels(labels: object, shape: tuple[int, int], vocab_size: int) -> Tensor:
    """long ``[B, T]`` like ``input_ids``, each a token id in [0, vocab_size) or IGNORE_INDEX."""
    if not isinstance(labels, Tensor):
        raise ArgumentTypeError(f"labels must be a Tensor, got {type(labels).__name__}")
    if labels.dtype != torch.long or tuple(labels.shape) != shape:
        raise ValueError(
            f"labels must be long {shape} like input_ids, got {labels.dtype} {tuple(labels.shape)}"
        )
    if labels.is_meta:  # a shape without values: nothing to range-check or score
        raise ValueError("labels is a meta tensor: it holds no values to check or score")
    outside = ((labels < 0) | (labels >= vocab_size)) & (labels != IGNORE_INDEX)
    if bool(outside.any()):  # cross_entropy would raise an IndexError
        raise ValueError(f"labels must lie in [0, {vocab_size}) or be {IGNORE_INDEX}")
    return labels


def shifted_cross_entropy(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean cross-entropy of logits[:, :-1] against labels[:, 1:], skipping -100.

    A sum over the scored tokens divided by their count (at least 1): a batch with
    nothing to score gives a zero still attached to the graph, not the plain mean's NaN.
    """
    if not isinstance(logits, Tensor):
        raise ArgumentTypeError(f"logits must be a Tensor, got {type(logits).__name__}")
    if not logits.is_floating_point() or logits.dim() != 3 or 0 in logits.shape:
        raise ValueError(
            f"logits must be a floating [B, T, V] tensor, got {logits.dtype} {tuple(logits.shape)}"
        )
    check_labels(labels, (logits.shape[0], logits.shape[1]), logits.shape[2])
    shift_logits = logits[:, :-1].reshape(-1, logits.shape[-1])
    shift_labels = labels[:, 1:].reshape(-1)
    total = functional.cross_entropy(
        shift_logits, shift_labels, ignore_index=IGNORE_INDEX, reduction="sum"
    )
    return total / (shift_labels != IGNORE_INDEX).sum().clamp(min=1)


__all__ = ["IGNORE_INDEX", "check_labels", "shifted_cross_entropy"]
