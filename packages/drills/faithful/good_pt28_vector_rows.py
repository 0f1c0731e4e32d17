"""A stranger's PT28 from the README alone: temperatures as a tensor, validation of the
generators first, greedy rows by torch.where, a 1-D multinomial per sampled row, [B, 1] out."""

import torch

VARIABLE = "DRILL_PT28_MODULE"


def sample_batch(logits, request_ids, generators, temperatures):
    ids = list(request_ids)
    for rid in ids:
        if not isinstance(generators.get(rid), torch.Generator):
            raise ValueError(f"generators lacks request {rid!r}")
    if len({id(generators[rid]) for rid in ids}) < len(ids) and len(set(ids)) == len(ids):
        raise ValueError("generators: two requests share a generator")
    if not torch.is_tensor(logits) or logits.ndim != 2 or not logits.is_floating_point():
        raise ValueError("logits must be floating [B, V]")
    n = logits.shape[0]
    if len(ids) != n or len(set(ids)) != n:
        raise ValueError("request_ids must hold B distinct ids")
    temps = torch.as_tensor(temperatures, dtype=torch.float64).flatten()
    if temps.numel() != n or not bool(torch.isfinite(temps).all()) or bool((temps < 0).any()):
        raise ValueError("temperatures must be B finite values >= 0")
    finite = torch.isfinite(logits)
    if bool((torch.isnan(logits) | torch.isposinf(logits)).any()) or not bool(finite.any(1).all()):
        raise ValueError("logits has a row that cannot be sampled")
    picked = logits.argmax(dim=1).clone()
    with torch.no_grad():
        for b in torch.nonzero(temps > 0).flatten().tolist():
            weights = torch.softmax(logits[b].float() / float(temps[b]), dim=0)
            picked[b] = torch.multinomial(weights, 1, generator=generators[ids[b]])[0]
    return picked[:, None]
