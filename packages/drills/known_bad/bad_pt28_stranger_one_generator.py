"""A stranger draws the whole batch in one multinomial with the first row's generator: a
request's draw depends on its batch row and on who else is in the batch."""

import torch

VARIABLE = "DRILL_PT28_MODULE"
EXPECTED_OWNER = "pt28"


def sample_batch(logits, request_ids, generators, temperatures):
    ids = list(request_ids)
    temps = torch.as_tensor(temperatures, dtype=torch.float32, device=logits.device)
    if len(ids) != logits.shape[0] or len(set(ids)) != len(ids):
        raise ValueError("request_ids must be distinct, one per row")
    if temps.shape != (logits.shape[0],) or torch.isnan(temps).any() or (temps < 0).any():
        raise ValueError("temperatures must be B values >= 0")
    if any(r not in generators for r in ids):
        raise ValueError("generators is missing a request")
    if len({id(generators[r]) for r in ids}) != len(ids):
        raise ValueError("generators are shared between requests")
    if torch.isnan(logits).any() or torch.isposinf(logits).any():
        raise ValueError("logits holds NaN or +inf")
    greedy = logits.argmax(-1)
    sampled_rows = temps > 0
    if not sampled_rows.any():
        return greedy
    probs = torch.softmax(logits.float() / temps.clamp(min=1e-6)[:, None], dim=-1)
    drawn = torch.multinomial(probs, 1, generator=generators[ids[0]]).squeeze(1)
    return torch.where(sampled_rows, drawn, greedy)
