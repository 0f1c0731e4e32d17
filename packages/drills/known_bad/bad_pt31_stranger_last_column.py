"""A stranger's core reads every row's last column, logits[:, -1], ignoring lengths: right
for a full chunk, wrong for every row that ends earlier."""

import torch

VARIABLE = "DRILL_PT31_MODULE"
EXPECTED_OWNER = "pt31"


def decode_core(logits, lengths, finished, scores, eos_id):
    logprobs = torch.log_softmax(logits[:, -1].float(), dim=-1)
    best, tokens = logprobs.max(dim=-1)
    tokens = torch.where(finished, torch.full_like(tokens, eos_id), tokens)
    best = best.masked_fill(finished, 0.0)
    return tokens, finished | (tokens == eos_id), scores + best


def decode_step(logits, lengths, finished, scores, eos_id, history):
    tokens, finished, scores = decode_core(logits, lengths, finished, scores, eos_id)
    history.append(tokens)
    return tokens, finished, scores, int((~finished).sum().item())


def graph_breaks():
    return [
        ["if finished.any():", "data-dependent branch"],
        ['print("step", len(history), "tokens", tokens)', "print"],
        ["live = int((~finished).sum().item())", "Tensor.item"],
    ]
