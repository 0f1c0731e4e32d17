"""A stranger's PT22 that takes torch.topk of the log-probabilities and ranks by counting
ids at least as likely: right on distinct logits, wrong whenever two ids tie (the tied
order is topk's, and a tied target is ranked last of its tie, not first)."""

import itertools

import torch

VARIABLE = "DRILL_PT22_MODULE"
EXPECTED_OWNER = "pt22"


def packed_prompt_logprobs(logits, token_ids, offsets, top_k):
    N, V = logits.shape
    bounds = offsets.tolist()
    if not bounds or bounds[0] != 0 or bounds[-1] != N or sorted(bounds) != bounds:
        raise ValueError(f"offsets {bounds} are malformed")
    if not 0 <= top_k <= V:
        raise ValueError(f"top_k {top_k} is not in [0, {V}]")
    table = torch.log_softmax(logits.float(), dim=-1)
    shifted = torch.cat([table[:1], table[:-1]])
    targets = token_ids.long()[:, None]
    logprobs = shifted.gather(1, targets).squeeze(1)
    ranks = (shifted >= shifted.gather(1, targets)).sum(1)
    values, ids = torch.topk(shifted.flip(1), top_k, dim=1)
    ids = V - 1 - ids  # undo the flip: among ties, topk now prefers higher ids
    first = torch.zeros(N, dtype=torch.bool)
    for start, end in itertools.pairwise(bounds):
        if end > start:
            first[start] = True
    logprobs[first], values[first] = float("nan"), float("nan")
    ranks[first], ids[first] = -1, -1
    return logprobs, ids, values, ranks
