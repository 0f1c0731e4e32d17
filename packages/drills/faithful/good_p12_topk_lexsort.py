"""A stranger's P12 from the README alone: log-probs in float64, the tie rule by ranking
score first and flat index second (a key sort), finished beams masked by index_put."""

import math

import torch

VARIABLE = "DRILL_P12_MODULE"


def beam_step(scores, logits, finished=None, eos_token_id=None):
    if finished is not None:
        if not torch.is_tensor(finished) or finished.dtype != torch.bool:
            raise ValueError("finished must be a bool tensor")
        if finished.shape != scores.shape:
            raise ValueError("finished must have scores' shape [B, K]")
        if not isinstance(eos_token_id, int) or not 0 <= eos_token_id < logits.shape[-1]:
            raise ValueError(f"eos_token_id {eos_token_id!r} is not a token of the vocabulary")
    if scores.ndim != 2 or logits.ndim != 3 or logits.shape[:2] != scores.shape:
        raise ValueError(f"scores {tuple(scores.shape)} vs logits {tuple(logits.shape)}")
    if bool(torch.isnan(scores).any()) or bool((scores == math.inf).any()):
        raise ValueError("scores has a NaN or +inf")
    b, k, v = logits.shape
    total = scores.double().unsqueeze(-1) + logits.double().log_softmax(-1)
    if finished is not None:
        total = total.clone()
        total[finished] = -math.inf
        rows, beams = finished.nonzero(as_tuple=True)
        total[rows, beams, eos_token_id] = scores.double()[rows, beams]
    flat_scores = total.reshape(b, k * v)
    # sort by flat index first, then stably by score: equal scores stay in index order
    index = torch.arange(k * v, device=logits.device).expand(b, -1)
    _, by_score = flat_scores.sort(dim=-1, descending=True, stable=True)
    chosen = index.gather(1, by_score)[:, :k]
    return (
        flat_scores.gather(1, chosen).float(),
        chosen % v,
        torch.div(chosen, v, rounding_mode="floor"),
    )
