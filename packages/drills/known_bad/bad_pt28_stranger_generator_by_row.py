"""A stranger keeps the generators in a list and indexes it by batch row, not by request id."""

import torch

VARIABLE = "DRILL_PT28_MODULE"
EXPECTED_OWNER = "pt28"


def sample_batch(logits, request_ids, generators, temperatures):
    ids = list(request_ids)
    temps = [float(t) for t in temperatures]
    if len(ids) != len(logits) or len(set(ids)) != len(ids):
        raise ValueError("request_ids must be distinct, one per row")
    if len(temps) != len(logits) or any(not t >= 0 for t in temps):
        raise ValueError("temperatures must be B values >= 0")
    if any(r not in generators for r in ids):
        raise ValueError("generators is missing a request")
    if len({id(generators[r]) for r in ids}) != len(ids):
        raise ValueError("generators are shared between requests")
    if torch.isnan(logits).any() or torch.isposinf(logits).any():
        raise ValueError("logits holds NaN or +inf")
    pool = list(generators.values())
    out = logits.argmax(-1)
    for b, t in enumerate(temps):
        if t > 0:
            probs = torch.softmax(logits[b].float() / t, dim=-1)
            out[b] = torch.multinomial(probs, 1, generator=pool[b])[0]
    return out
