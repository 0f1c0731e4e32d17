"""A stranger's PT28 from the kit's words alone: the one rejection the kit names (a repeated
request id) first, then one row at a time, each sampled row drawing from its own request's
generator; greedy rows take argmax; nothing else validated."""

import torch

VARIABLE = "DRILL_PT28_MODULE"


def sample_batch(logits, request_ids, generators, temperatures):
    ids = list(request_ids)
    if len(set(ids)) != len(ids):
        raise ValueError(f"request_ids repeat an id: {ids}")
    tokens = []
    for row, request, temperature in zip(logits, ids, temperatures):
        t = float(temperature)
        if t == 0:
            tokens.append(int(row.argmax()))
            continue
        probs = torch.softmax(row.float() / t, dim=-1)
        drawn = torch.multinomial(probs, 1, generator=generators[request])
        tokens.append(int(drawn))
    return torch.tensor(tokens, dtype=torch.int64, device=logits.device)
