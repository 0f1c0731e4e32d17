"""PT31 written from the kit's row alone: gather for the last position, float64 inside, a
0/1 mask instead of torch.where, the side effects behind a torch.compiler.disable'd helper,
the breaks as lists in another order and case."""

import torch

VARIABLE = "DRILL_PT31_MODULE"


def decode_core(logits, lengths, finished, scores, eos_id):
    index = (lengths - 1).view(-1, 1, 1).expand(-1, 1, logits.shape[-1])
    last = logits.gather(1, index).squeeze(1).double()
    logprobs = last - torch.logsumexp(last, dim=-1, keepdim=True)
    best, tokens = logprobs.max(dim=-1)
    done = finished.long()
    tokens = tokens * (1 - done) + eos_id * done
    gained = best * (1 - done).double()
    return tokens, torch.logical_or(finished, tokens == eos_id), (scores.double() + gained).float()


@torch.compiler.disable
def _record(history, tokens, finished):
    history.append(tokens)
    live = int(finished.logical_not().sum())
    print(f"{len(history)} steps, {live} live")
    return live


def decode_step(logits, lengths, finished, scores, eos_id, history):
    tokens, finished, scores = decode_core(logits, lengths, finished, scores, eos_id)
    return tokens, finished, scores, _record(history, tokens, finished)


def graph_breaks():
    return [
        ["  live = int((~finished).sum().item())", "TENSOR.ITEM"],
        ["if finished.any():  ", "Data-Dependent Branch"],
        ['print("step", len(history), "tokens", tokens)', "Print"],
    ]
