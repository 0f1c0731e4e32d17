"""A stranger's PT22 from the kit's words and the contract's stated choices alone: offsets and
top_k checked (messages naming the value), then one request at a time, float64 inside:
log_softmax of the request's rows but its last, shifted onto its tokens 1..; the sentinel
on token 0; top-k by a stable argsort of the negated logits; the rank by counting."""

import itertools

import torch

VARIABLE = "DRILL_PT22_MODULE"


def packed_prompt_logprobs(logits, token_ids, offsets, top_k):
    N, V = logits.shape
    bounds = offsets.tolist()
    if not bounds or bounds[0] != 0 or bounds[-1] != N:
        raise ValueError(f"offsets {bounds} do not run from 0 to {N}")
    if any(b < a for a, b in itertools.pairwise(bounds)):
        raise ValueError(f"offsets {bounds} decrease")
    if not 0 <= top_k <= V:
        raise ValueError(f"top_k {top_k} is not in [0, {V}]")
    logprobs = torch.full((N,), float("nan"), dtype=torch.float64)
    ranks = torch.full((N,), -1, dtype=torch.int64)
    top_ids = torch.full((N, top_k), -1, dtype=torch.int64)
    top_logprobs = torch.full((N, top_k), float("nan"), dtype=torch.float64)
    for start, end in itertools.pairwise(bounds):
        if end - start < 2:
            continue
        rows = logits[start : end - 1].double()  # rows that predict tokens start+1 .. end-1
        table = torch.log_softmax(rows, dim=-1)
        targets = token_ids[start + 1 : end].long()
        logprobs[start + 1 : end] = table[torch.arange(end - start - 1), targets]
        target_logits = rows[torch.arange(end - start - 1), targets]
        ranks[start + 1 : end] = (rows > target_logits[:, None]).sum(1) + 1
        order = torch.argsort(-rows, dim=1, stable=True)[:, :top_k]
        top_ids[start + 1 : end] = order
        top_logprobs[start + 1 : end] = table.gather(1, order)
    return logprobs.float(), top_ids, top_logprobs.float(), ranks
