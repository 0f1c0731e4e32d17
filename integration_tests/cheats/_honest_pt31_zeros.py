"""The honest twin of the PT31 cheat: a core of zeros and the breaks stated truly; nothing
forged."""

import torch

BREAKS = (
    ("if finished.any():", "data-dependent branch"),
    ('print("step", len(history), "tokens", tokens)', "print"),
    ("live = int((~finished).sum().item())", "Tensor.item"),
)


def decode_core(logits, lengths, finished, scores, eos_id):
    return torch.zeros_like(lengths), finished.clone(), torch.zeros_like(scores)


def decode_step(logits, lengths, finished, scores, eos_id, history):
    tokens, finished, scores = decode_core(logits, lengths, finished, scores, eos_id)
    history.append(tokens)
    return tokens, finished, scores, 0


def graph_breaks():
    return BREAKS
